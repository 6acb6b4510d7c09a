import { randomBytes } from "node:crypto";
import type { RedisClient } from "../redis/client.ts";

export interface AcquireOptions {
  ttlMs: number;
  /** Tries in all, the first included. */
  maxAttempts: number;
  /** Backoff: a random wait up to min(maxDelayMs, baseDelayMs · 2^try) between tries ("full jitter"). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Called once per acquisition that found the lock taken. */
  onWait?: () => void;
}

export interface Acquired {
  token: string;
  /** Tries that found the lock taken. */
  waits: number;
}

export function newToken(): string {
  return randomBytes(12).toString("hex");
}

/**
 * Takes a lock with `SET key token NX PX ttl`, retrying with bounded, jittered exponential backoff. The lease
 * (PX) frees the lock by itself when its holder dies. Returns null when every try found the lock taken.
 */
export async function acquireLock(redis: RedisClient, key: string, opts: AcquireOptions): Promise<Acquired | null> {
  const token = newToken();
  const base = opts.baseDelayMs ?? 1;
  const max = opts.maxDelayMs ?? 16;
  for (let attempt = 0; attempt < opts.maxAttempts; attempt++) {
    if ((await redis.set(key, token, "PX", opts.ttlMs, "NX")) === "OK") return { token, waits: attempt };
    if (attempt === 0) opts.onWait?.();
    const ceiling = Math.min(max, base * 2 ** Math.min(attempt, 16));
    await sleep(Math.random() * ceiling);
  }
  return null;
}

/** Compare-and-delete: only the owner (the token's holder) releases; true when it did. */
export async function releaseLock(redis: RedisClient, key: string, token: string): Promise<boolean> {
  return (await redis.labReleaseLock(key, token)) === 1;
}

/** Compare-and-extend: only the owner renews its lease; true when it did. */
export async function renewLock(redis: RedisClient, key: string, token: string, ttlMs: number): Promise<boolean> {
  return (await redis.labRenewLock(key, token, ttlMs)) === 1;
}

export interface Watchdog {
  /** Stops renewing (the work is done, or the worker died and its watchdog with it). */
  stop(): void;
  /** A renewal found the lock no longer ours. */
  readonly lost: boolean;
  readonly renewals: number;
}

/** Calls `tick` every `ms` until the returned function is called. */
export type Every = (ms: number, tick: () => Promise<void>) => () => void;

/** setInterval, not keeping the process alive. */
export const every: Every = (ms, tick) => {
  const timer = setInterval(() => void tick(), ms);
  timer.unref();
  return () => clearInterval(timer);
};

/**
 * Renews the lease every ttl/3 while the work runs, so slow work keeps its lock and a dead worker loses it.
 * `schedule` is the timer (tests tick it by hand).
 */
export function startWatchdog(
  redis: RedisClient,
  key: string,
  token: string,
  ttlMs: number,
  schedule: Every = every,
): Watchdog {
  let lost = false;
  let renewals = 0;
  const stop = schedule(Math.max(1, Math.floor(ttlMs / 3)), () =>
    renewLock(redis, key, token, ttlMs).then(
      (ok) => {
        if (ok) renewals++;
        else {
          lost = true;
          stop();
        }
      },
      () => undefined,
    ),
  );
  return {
    stop,
    get lost() {
      return lost;
    },
    get renewals() {
      return renewals;
    },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
