import { counterKeys, userLockKey } from "../../redis/keys.ts";
import { acquireLock, releaseLock, startWatchdog, type Watchdog } from "../lock.ts";
import { counterSteps } from "./naive.ts";
import { GaveUp, readCounters, WorkerDied, type Strategy, type StrategyContext } from "./types.ts";

/**
 * The naive steps under a per-user lock. The lock serialises a user's updates (no race), but it does not make
 * the two writes atomic: a worker that fails or dies between them still leaves the total behind.
 */
export function lockStrategy(ctx: StrategyContext): Strategy {
  const { ttlMs, watchdog, maxAttempts } = ctx.lock;
  return {
    name: "lock",
    prepare: async () => undefined,
    async apply(conn, op, hooks, stats) {
      const key = userLockKey(op.userId, ctx.prefix);
      const acquired = await acquireLock(conn, key, { ttlMs, maxAttempts, onWait: hooks.waiting });
      if (!acquired) throw new GaveUp(`lock of user ${op.userId} still taken after ${maxAttempts} tries`);
      stats.lockWaits += acquired.waits;
      await hooks.trace?.(lockTakenTrace(ttlMs, acquired.waits));
      const dog: Watchdog | null = watchdog ? startWatchdog(conn, key, acquired.token, ttlMs) : null;
      let died = false;
      try {
        await counterSteps(conn, ctx.prefix, op, hooks);
      } catch (err) {
        // A dead worker releases nothing and its watchdog dies with it: the lease has to run out.
        died = err instanceof WorkerDied;
        throw err;
      } finally {
        dog?.stop();
        if (!died) {
          const released = await releaseLock(conn, key, acquired.token);
          await hooks.trace?.(released ? "release (compare-and-delete) → 1" : "release → 0: the lease had expired");
        }
      }
    },
    read: (conn, userIds) => readCounters(conn, (id) => counterKeys(id, ctx.prefix), userIds),
  };
}

/** The story's line for a lock taken, after how many tries that found it busy ("1 busy try", "2 busy tries"). */
export function lockTakenTrace(ttlMs: number, waits: number): string {
  if (waits === 0) return `SET lock NX PX ${ttlMs} → OK`;
  return `SET lock NX PX ${ttlMs} → OK after ${waits} busy ${waits === 1 ? "try" : "tries"}`;
}
