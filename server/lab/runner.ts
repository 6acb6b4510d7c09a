import type { RedisClient } from "../redis/client.ts";
import { MAX_ATTEMPTS } from "../contracts/lab-defaults.ts";
import type { LabSample, LabStrategyName, LabStrategyResult, LabWorkload } from "../contracts/lab.ts";
import type { LabRedis } from "./lab-redis.ts";
import { sleep } from "./lock.ts";
import { badgesOf, driftOf, percentile, round, wrongOf } from "./measure.ts";
import { createStrategy } from "./strategies/index.ts";
import {
  StepFailed,
  WorkerDied,
  type OpHooks,
  type OpStats,
  type Strategy,
  type UserState,
} from "./strategies/types.ts";
import { createWorkload, HOT_USER, type LabOp, type Workload } from "./workload.ts";

const SAMPLE_USERS = 100;
/** Users shown in the live badge view: the hot user first (the sampled list starts with them). */
const BADGE_USERS = 3;

export interface RunStrategyOptions {
  name: LabStrategyName;
  workload: LabWorkload;
  labRedis: LabRedis;
  /** `lab:<run>:<strategy>:` */
  prefix: string;
  /** Restart the lab's redis-server halfway (needs labRedis.restart). */
  restart?: boolean;
  onSample?: (sample: Omit<LabSample, "runId">) => void;
  sampleEveryMs?: number;
  signal?: AbortSignal;
}

export interface StrategyRun {
  result: LabStrategyResult;
  workload: Workload;
  strategy: Strategy;
}

function userIds(count: number): number[] {
  return Array.from({ length: count }, (_, i) => i + 1);
}

/**
 * Runs the seeded workload against one strategy with `workload.workers` concurrent workers, each on its own
 * connection, injecting the faults; samples throughput and drift while it runs, and measures drift and
 * differences from the truth once every operation has finished.
 */
export async function runStrategy(opts: RunStrategyOptions): Promise<StrategyRun> {
  const w = opts.workload;
  const workload = createWorkload(w);
  const strategy = createStrategy(opts.name, {
    prefix: opts.prefix,
    truth: workload.truth,
    lock: w.lock,
    watch: w.watch,
  });
  const users = userIds(w.users);
  const sampled = [HOT_USER, ...users.filter((id) => id !== HOT_USER).slice(0, SAMPLE_USERS - 1)];
  const monitor = await opts.labRedis.connect();
  await strategy.prepare(monitor, users);

  const stats: OpStats = { retries: 0, lockWaits: 0 };
  const latencies = new Float64Array(w.operations);
  let completed = 0;
  let aborted = 0;
  let lost = 0;
  let restarted = false;
  let restarting: Promise<void> | undefined;

  async function runOp(worker: { conn: RedisClient }, op: LabOp): Promise<void> {
    const started = performance.now();
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const faults = workload.faultsFor(op, attempt);
      const hooks: OpHooks = {
        gap: async () => {
          if (faults.delayMs > 0) await sleep(faults.delayMs);
          if (faults.die) throw new WorkerDied();
          if (faults.fail) throw new StepFailed();
        },
      };
      try {
        await strategy.apply(worker.conn, op, hooks, stats);
        latencies[completed++] = performance.now() - started;
        return;
      } catch (err) {
        aborted++;
        if (err instanceof WorkerDied) {
          // The worker is gone with its connection (and the WATCH or lock it held); a new one takes its place.
          worker.conn.disconnect();
          worker.conn = await opts.labRedis.connect();
        } else if (!(err instanceof StepFailed)) {
          // Redis away (the restart fault) or a bound reached: back off before the redelivery.
          await sleep(Math.min(200, 5 * (attempt + 1)));
        }
      }
    }
    lost++;
  }

  async function workerLoop(): Promise<void> {
    const worker = { conn: await opts.labRedis.connect() };
    try {
      for (let op = workload.next(); op; op = workload.next()) {
        if (opts.signal?.aborted) return;
        if (opts.restart && !restarted && opts.labRedis.restart && workload.issued >= w.operations / 2) {
          restarted = true;
          restarting = opts.labRedis.restart();
          // Awaited below (a failed restart fails the run); until then a rejection is not unhandled.
          restarting.catch(() => undefined);
        }
        // The last quarter of the operations waits for the restart, so at least that many run on the restarted
        // server however fast they go (on a fast machine the whole second half could otherwise finish on the old
        // server before it stopped, and the restart would test nothing).
        if (restarting && workload.issued > (3 * w.operations) / 4) await restarting;
        await runOp(worker, op);
      }
    } finally {
      worker.conn.disconnect();
    }
  }

  const started = performance.now();
  const badgeUsers = sampled.slice(0, BADGE_USERS);
  const noBadges = badgesOf(badgeUsers, []);
  opts.onSample?.({
    strategy: opts.name,
    t: 0,
    opsPerSec: 0,
    completed: 0,
    drift: { users: 0, amount: 0 },
    badges: noBadges,
  });
  let lastT = started;
  let lastCompleted = 0;
  let last = { drift: { users: 0, amount: 0 }, badges: noBadges };
  /** The live sample being read and emitted, if any. */
  let sampling: Promise<void> | undefined;
  const sampler = setInterval(() => {
    if (sampling || !opts.onSample) return;
    const now = performance.now();
    const done = completed;
    const opsPerSec = ((done - lastCompleted) * 1000) / Math.max(1, now - lastT);
    lastT = now;
    lastCompleted = done;
    sampling = strategy
      .read(monitor, sampled, { rebuildMissing: restarted })
      .then((states) => (last = { drift: driftOf(states), badges: badgesOf(badgeUsers, states) }))
      .catch(() => last)
      .then(({ drift, badges }) => {
        opts.onSample?.({
          strategy: opts.name,
          t: round((now - started) / 1000, 2),
          opsPerSec: Math.round(opsPerSec),
          completed: done,
          drift,
          badges,
        });
      })
      .finally(() => (sampling = undefined));
  }, opts.sampleEveryMs ?? 250);

  try {
    await Promise.all(Array.from({ length: w.workers }, workerLoop));
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - started) / 1000;
  // A live sample read before the end is emitted before the end-of-run sample, never after it (the page shows the
  // newest). Redis answers one connection in order, but that sample is emitted a few callbacks after its read is
  // answered and the end's right after: when both reads were answered in one chunk, it came second.
  await sampling;
  await restarting;
  if (monitor.status !== "ready") await new Promise((resolve) => monitor.once("ready", resolve));

  const states: UserState[] = [];
  for (let i = 0; i < users.length; i += 500) {
    states.push(...(await strategy.read(monitor, users.slice(i, i + 500), { rebuildMissing: restarted })));
  }
  monitor.disconnect();
  const sorted = latencies.subarray(0, completed).sort();
  const drift = driftOf(states);
  opts.onSample?.({
    strategy: opts.name,
    t: round(seconds, 2),
    opsPerSec: Math.round(completed / Math.max(seconds, 1e-6)),
    completed,
    drift,
    // `states[i]` belongs to user i + 1.
    badges: badgesOf(
      badgeUsers,
      badgeUsers.map((id) => states[id - 1]),
    ),
  });
  return {
    workload,
    strategy,
    result: {
      strategy: opts.name,
      operations: w.operations,
      completed,
      seconds: round(seconds, 3),
      opsPerSec: Math.round(completed / Math.max(seconds, 1e-6)),
      p50Ms: round(percentile(sorted, 50), 3),
      p99Ms: round(percentile(sorted, 99), 3),
      retries: stats.retries,
      lockWaits: stats.lockWaits,
      aborted,
      lost,
      drift,
      wrong: wrongOf(users, states, workload.truth),
    },
  };
}
