/**
 * Where a send's time went, from the instances' own /metrics: the `tally_send_stage_seconds` histogram (commit in
 * PostgreSQL, counters and the push to other instances in Redis, the local pushes) and `tally_send_group_size`
 * (sends per PostgreSQL statement), read before and after a window and compared. The histograms count everything
 * the instance served, so a window's share is the difference.
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

/**
 * One histogram of a Prometheus text exposition (prom-client's /metrics), by the value of `label` (series without
 * it are skipped); without a label, every series under the key "". Series that share a key (other labels differ)
 * are added up.
 */
export function parseHistogram(text: string, metric: string, label?: string): StageSnapshot {
  const series: StageSnapshot = new Map();
  const of = (key: string) => {
    let h = series.get(key);
    if (!h) series.set(key, (h = { buckets: [], sumS: 0, count: 0 }));
    return h;
  };
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${metric}_`)) continue;
    const m = /^(\w+)_(bucket|sum|count)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== metric) continue;
    const labels = Object.fromEntries([...(m[3] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    const key = label === undefined ? "" : labels[label];
    if (key === undefined) continue;
    const value = Number(m[4]);
    const h = of(key);
    if (m[2] === "sum") h.sumS += value;
    else if (m[2] === "count") h.count += value;
    else {
      const le = labels.le === "+Inf" ? Number.POSITIVE_INFINITY : Number(labels.le);
      const bucket = h.buckets.find((b) => b[0] === le);
      if (bucket) bucket[1] += value;
      else h.buckets.push([le, value]);
    }
  }
  for (const h of series.values()) h.buckets.sort((x, y) => x[0] - y[0]);
  return series;
}

/** The stage histogram, `tally_send_stage_seconds`, by stage. */
export function parseStages(text: string): StageSnapshot {
  return parseHistogram(text, "tally_send_stage_seconds", "stage");
}

/** The group sizes, `tally_send_group_size` (sends per PostgreSQL statement), under the key "". */
export function parseGroups(text: string): StageSnapshot {
  return parseHistogram(text, "tally_send_group_size");
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

/** What a histogram gained between two readings (`before` absent: everything so far). */
function histogramBetween(before: StageHistogram | undefined, after: StageHistogram): StageHistogram {
  return {
    buckets: after.buckets.map(([le, c]): [number, number] => [
      le,
      c - (before?.buckets.find((x) => x[0] === le)?.[1] ?? 0),
    ]),
    sumS: after.sumS - (before?.sumS ?? 0),
    count: after.count - (before?.count ?? 0),
  };
}

/** What each stage did between two snapshots, in the order `order` names them, then any others. */
export function stagesBetween(before: StageSnapshot, after: StageSnapshot, order: string[] = []): StageWindow[] {
  const names = [...new Set([...order.filter((s) => after.has(s)), ...after.keys()])];
  return names.map((stage) => {
    const { buckets, sumS, count: sends } = histogramBetween(before.get(stage), after.get(stage)!);
    return {
      stage,
      sends,
      meanMs: sends > 0 ? ms(sumS / sends) : null,
      p50Ms: ms(bucketQuantile(buckets, 0.5)),
      p99Ms: ms(bucketQuantile(buckets, 0.99)),
    };
  });
}

/** The groups a window stored: PostgreSQL statements, the sends they carried, and sends per statement. */
export interface GroupWindow {
  statements: number;
  sends: number;
  mean: number | null;
  /** The upper bound of the bucket (1, 2, 3, 4, 8…) the quantile falls in: sizes are whole numbers. Infinity past the last. */
  p50: number | null;
  p99: number | null;
  /** The largest finite bucket bound: an Infinity above means "more than this". */
  lastBound: number;
}

/** The upper bound of the bucket the q-quantile (0..1) falls in; null without samples. */
export function bucketBound(buckets: [number, number][], q: number): number | null {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total <= 0) return null;
  return buckets.find(([, count]) => count >= q * total)?.[0] ?? null;
}

/** What the group-size histogram gained between two snapshots; undefined when the instances do not expose it. */
export function groupsBetween(before: StageSnapshot, after: StageSnapshot): GroupWindow | undefined {
  const a = after.get("");
  if (!a) return undefined;
  const { buckets, sumS: sends, count: statements } = histogramBetween(before.get(""), a);
  return {
    statements,
    sends,
    mean: statements > 0 ? Math.round((sends / statements) * 100) / 100 : null,
    p50: bucketBound(buckets, 0.5),
    p99: bucketBound(buckets, 0.99),
    lastBound: Math.max(0, ...buckets.map(([le]) => le).filter(Number.isFinite)),
  };
}

/** What the bench reads from the instances' /metrics at each window's edge. */
export interface SendMetrics {
  stages: StageSnapshot;
  groups: StageSnapshot;
}

/** The merged stage and group-size histograms of instances, read from each one's /metrics (loopback needs no token). */
export async function readSendMetrics(urls: string[]): Promise<SendMetrics> {
  const texts = await Promise.all(
    urls.map(async (url) => {
      const res = await fetch(`${url}/metrics`);
      if (!res.ok) throw new Error(`${url}/metrics answered ${res.status}`);
      return res.text();
    }),
  );
  return { stages: mergeStages(texts.map(parseStages)), groups: mergeStages(texts.map(parseGroups)) };
}
