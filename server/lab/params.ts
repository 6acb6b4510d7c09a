import { z } from "zod";
import type { LabRunInput, LabWorkload } from "../contracts/lab.ts";
import { DEFAULT_WORKLOAD } from "../contracts/lab-defaults.ts";
import { wholeNumber as int } from "../contracts/inputs.ts";

export { DEFAULT_WORKLOAD, STRATEGIES } from "../contracts/lab-defaults.ts";

const share = z.number().min(0).max(1);

const d = DEFAULT_WORKLOAD;

export const workloadSchema = z.strictObject({
  seed: int(0, 2 ** 31 - 1).default(d.seed),
  users: int(1, 10_000).default(d.users),
  conversationsPerUser: int(1, 100).default(d.conversationsPerUser),
  workers: int(1, 64).default(d.workers),
  operations: int(1, 1_000_000).default(d.operations),
  sendShare: share.default(d.sendShare),
  hotUserShare: share.default(d.hotUserShare),
  faults: z
    .strictObject({
      stepFailureRate: z.number().min(0).max(0.5).default(d.faults.stepFailureRate),
      stepDelayMs: int(0, 1000).default(d.faults.stepDelayMs),
      stepDelayRate: share.default(d.faults.stepDelayRate),
      workerDeathRate: z.number().min(0).max(0.1).default(d.faults.workerDeathRate),
      redisRestart: z.boolean().default(d.faults.redisRestart),
    })
    .prefault({}),
  lock: z
    .strictObject({
      ttlMs: int(10, 60_000).default(d.lock.ttlMs),
      watchdog: z.boolean().default(d.lock.watchdog),
      maxAttempts: int(1, 10_000).default(d.lock.maxAttempts),
    })
    .prefault({}),
  watch: z.strictObject({ maxRetries: int(0, 10_000).default(d.watch.maxRetries) }).prefault({}),
});

export const runInputSchema = z.strictObject({
  strategies: z
    .array(z.enum(["naive", "lock", "watch", "lua"]))
    .min(1, "Pick at least one strategy.")
    .max(4)
    .refine((list) => new Set(list).size === list.length, "Each strategy at most once."),
  workload: workloadSchema.prefault({}),
});

export const storyInputSchema = z.strictObject({ scenario: z.enum(["race", "crash", "mute"]) });
export const stopInputSchema = z.strictObject({
  runId: z.string().regex(/^[a-z0-9]{1,32}$/, "That is not a run's id."),
});
export const botsInputSchema = z.strictObject({
  rate: z.number().min(0.1).max(20),
  count: int(1, 5).default(3),
});

/** The workload with every default filled in; throws a ZodError on bad input. */
export function resolveWorkload(input: LabRunInput["workload"] = {}): LabWorkload {
  return workloadSchema.parse(input);
}
