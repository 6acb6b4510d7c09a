/**
 * Where a send's time went, from the instances' own /metrics: the `tally_send_stage_seconds` histogram (commit in
 * PostgreSQL, counters and the push to other instances in Redis, the local pushes), read before and after a
 * window and compared. The histogram counts every send the instance served, so a window's share is the difference.
 */

/** One stage's histogram as exposed: cumulative bucket counts by upper bound (seconds, ascending), sum, count. */
export interface StageHistogram {
  buckets: [le: number, count: number][];
  sumS: number;
  count: number;
}

export type StageSnapshot = Map<string, StageHistogram>;

export interface StageWindow {
  stage: string;
  sends: number;
  meanMs: number | null;
  /** Estimated from the buckets by linear interpolation inside the bucket (as PromQL's histogram_quantile). */
  p50Ms: number | null;
  p99Ms: number | null;
}

const METRIC = "tally_send_stage_seconds";

/** The stage histogram in a Prometheus text exposition (prom-client's /metrics); stages without samples too. */
export function parseStages(text: string): StageSnapshot {
  const stages: StageSnapshot = new Map();
  const of = (stage: string) => {
    let h = stages.get(stage);
    if (!h) stages.set(stage, (h = { buckets: [], sumS: 0, count: 0 }));
    return h;
  };
  for (const line of text.split("\n")) {
    if (!line.startsWith(METRIC)) continue;
    const m = /^tally_send_stage_seconds_(bucket|sum|count)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    if (labels.stage === undefined) continue;
    const value = Number(m[3]);
    const h = of(labels.stage);
    if (m[1] === "sum") h.sumS = value;
    else if (m[1] === "count") h.count = value;
    else h.buckets.push([labels.le === "+Inf" ? Number.POSITIVE_INFINITY : Number(labels.le), value]);
  }
  for (const h of stages.values()) h.buckets.sort((x, y) => x[0] - y[0]);
  return stages;
}

/** Several instances' snapshots as one (their counts added bucket by bucket). */
export function mergeStages(snapshots: StageSnapshot[]): StageSnapshot {
  const out: StageSnapshot = new Map();
  for (const snapshot of snapshots) {
    for (const [stage, h] of snapshot) {
      const into = out.get(stage);
      if (!into) {
        out.set(stage, { buckets: h.buckets.map(([le, c]) => [le, c]), sumS: h.sumS, count: h.count });
        continue;
      }
      into.sumS += h.sumS;
      into.count += h.count;
      for (const [le, c] of h.buckets) {
        const bucket = into.buckets.find((b) => b[0] === le);
        if (bucket) bucket[1] += c;
        else into.buckets.push([le, c]);
      }
      into.buckets.sort((x, y) => x[0] - y[0]);
    }
  }
  return out;
}

/** The q-quantile (0..1) of cumulative buckets, in seconds; null without samples. */
export function bucketQuantile(buckets: [number, number][], q: number): number | null {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      // Past the last finite bound there is nothing to interpolate to: answer that bound.
      if (!Number.isFinite(le)) return lower;
      const inBucket = count - below;
      return inBucket <= 0 ? le : lower + ((le - lower) * (rank - below)) / inBucket;
    }
    lower = Number.isFinite(le) ? le : lower;
    below = count;
  }
  return lower;
}

const ms = (s: number | null) => (s === null ? null : Math.round(s * 1e5) / 100);

/** What each stage did between two snapshots, in the order `order` names them, then any others. */
export function stagesBetween(before: StageSnapshot, after: StageSnapshot, order: string[] = []): StageWindow[] {
  const names = [...new Set([...order.filter((s) => after.has(s)), ...after.keys()])];
  return names.map((stage) => {
    const a = after.get(stage)!;
    const b = before.get(stage);
    const sends = a.count - (b?.count ?? 0);
    const buckets = a.buckets.map(([le, c]): [number, number] => [
      le,
      c - (b?.buckets.find((x) => x[0] === le)?.[1] ?? 0),
    ]);
    return {
      stage,
      sends,
      meanMs: sends > 0 ? ms((a.sumS - (b?.sumS ?? 0)) / sends) : null,
      p50Ms: ms(bucketQuantile(buckets, 0.5)),
      p99Ms: ms(bucketQuantile(buckets, 0.99)),
    };
  });
}

/** The merged stage histograms of instances, read from each one's /metrics (loopback needs no token). */
export async function readStages(urls: string[]): Promise<StageSnapshot> {
  const texts = await Promise.all(
    urls.map(async (url) => {
      const res = await fetch(`${url}/metrics`);
      if (!res.ok) throw new Error(`${url}/metrics answered ${res.status}`);
      return res.text();
    }),
  );
  return mergeStages(texts.map(parseStages));
}
