import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Redis, type RedisOptions, type Result } from "ioredis";
import { defineScripts } from "../redis/scripts.ts";

function lua(name: string): string {
  return readFileSync(fileURLToPath(new URL(`./lua/${name}.lua`, import.meta.url)), "utf8");
}

/** The lab's own scripts (the lock strategy's owner-only release and renewal); chat never uses them. */
export const labScripts = {
  labReleaseLock: { numberOfKeys: 1, lua: lua("release-lock") },
  labRenewLock: { numberOfKeys: 1, lua: lua("renew-lock") },
} as const;

/** A connection with Tally's production scripts and the lab's scripts defined. */
export function defineLabScripts(redis: Redis): Redis {
  defineScripts(redis);
  for (const [name, definition] of Object.entries(labScripts)) redis.defineCommand(name, definition);
  return redis;
}

/**
 * Lab connections fail fast while Redis is away (the restart fault) and never replay a command on another
 * connection behind the caller's back (a replayed EXEC would run without its WATCH): the runner redelivers the
 * whole operation instead, as the outbox would.
 */
export const LAB_REDIS_OPTIONS: RedisOptions = {
  maxRetriesPerRequest: 0,
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  retryStrategy: (times) => Math.min(10 * times, 100),
};

const epochs = new WeakMap<Redis, number>();

/** A connection with the scripts defined, once it is ready; counts its reconnects (see connectionEpoch). */
export async function readyLabConnection(conn: Redis): Promise<Redis> {
  defineLabScripts(conn);
  epochs.set(conn, 0);
  conn.on("close", () => epochs.set(conn, (epochs.get(conn) ?? 0) + 1));
  conn.on("error", () => undefined);
  if (conn.status !== "ready") {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("lab Redis connection not ready within 5 s")), 5000);
      conn.once("ready", () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  return conn;
}

/** Changes whenever the connection closed (and maybe reconnected): WATCH state does not survive that. */
export function connectionEpoch(conn: Redis): number {
  return epochs.get(conn) ?? 0;
}

export function createLabConnection(url: string): Promise<Redis> {
  return readyLabConnection(new Redis(url, LAB_REDIS_OPTIONS));
}

declare module "ioredis" {
  interface RedisCommander<Context> {
    labReleaseLock(key: string, token: string): Result<0 | 1, Context>;
    labRenewLock(key: string, token: string, ttlMs: number): Result<0 | 1, Context>;
  }
}
