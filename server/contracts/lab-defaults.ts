import type { LabStrategyName, LabWorkload } from "./lab.ts";

// No runtime imports: the /lab page reads these too, so its form starts where the server's defaults are.

export const STRATEGIES: readonly LabStrategyName[] = ["naive", "lock", "watch", "lua"];

/** Attempts per operation: the first and the redeliveries (as Tally's outbox redelivers after a failure). */
export const MAX_ATTEMPTS = 25;

/** Defaults: a small hot-user comparison that finishes in a few seconds on two cores. */
export const DEFAULT_WORKLOAD: LabWorkload = {
  seed: 1,
  users: 50,
  conversationsPerUser: 4,
  workers: 16,
  operations: 4000,
  sendShare: 0.7,
  hotUserShare: 0.3,
  faults: { stepFailureRate: 0, stepDelayMs: 0, stepDelayRate: 0.2, workerDeathRate: 0, redisRestart: false },
  lock: { ttlMs: 250, watchdog: true, maxAttempts: 200 },
  watch: { maxRetries: 50 },
};

/** The lock's lease in the lab's stories (a run's is DEFAULT_WORKLOAD.lock.ttlMs). */
export const STORY_LOCK_TTL_MS = 300;
