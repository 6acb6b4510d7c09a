import { randomBytes } from "node:crypto";
import type { LabRunInfo, LabRunResult, LabSample, LabStrategyName, LabWorkload } from "../contracts/lab.ts";
import { labPrefix } from "../redis/keys.ts";
import type { LabRedis } from "./lab-redis.ts";
import { runStrategy } from "./runner.ts";

export function newRunId(): string {
  return randomBytes(6).toString("hex");
}

export const RESTART_NEEDS_PRIVATE =
  'The "Redis restart" fault is off: this run uses a Redis the lab did not start (the app\'s, or a cluster), ' +
  "which it never restarts.";

/** The run as it will happen: the restart fault needs the lab's own redis-server. */
export function describeRun(
  runId: string,
  strategies: LabStrategyName[],
  workload: LabWorkload,
  labRedis: LabRedis,
): LabRunInfo {
  const notices = [...labRedis.notices];
  let resolved = workload;
  if (workload.faults.redisRestart && !labRedis.restart) {
    resolved = { ...workload, faults: { ...workload.faults, redisRestart: false } };
    if (!notices.includes(RESTART_NEEDS_PRIVATE)) notices.push(RESTART_NEEDS_PRIVATE);
  }
  return { runId, strategies, workload: resolved, redis: labRedis.kind, notices };
}

/**
 * Runs the same seeded workload against each strategy in turn, each on its own key prefix, and deletes each
 * strategy's keys once it is measured. Sequential on purpose: on two cores, strategies running at once would
 * measure each other.
 */
export async function runLab(opts: {
  run: LabRunInfo;
  labRedis: LabRedis;
  onSample?: (sample: LabSample) => void;
  signal?: AbortSignal;
}): Promise<Omit<LabRunResult, "end">> {
  const { run, labRedis } = opts;
  const results = [];
  for (const name of run.strategies) {
    if (opts.signal?.aborted) break;
    const prefix = labPrefix(run.runId, name);
    try {
      const { result } = await runStrategy({
        name,
        workload: run.workload,
        labRedis,
        prefix,
        restart: run.workload.faults.redisRestart,
        signal: opts.signal,
        onSample: (sample) => opts.onSample?.({ runId: run.runId, ...sample }),
      });
      results.push(result);
    } finally {
      await labRedis.deleteKeys(prefix).catch(() => 0);
    }
  }
  return { runId: run.runId, results, notices: run.notices };
}
