import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Cluster, Redis, type ClusterOptions, type RedisOptions, type Result } from "ioredis";
import { clusterNodeOptions, isClusterTarget, seedNodes, type RedisClient, type RedisTarget } from "../redis/client.ts";
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
export function defineLabScripts<T extends RedisClient>(redis: T): T {
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

/**
 * The same on a Redis Cluster, where MOVED, ASK and TRYAGAIN are still followed (the command did not run), but a
 * command whose node went away or whose cluster is down fails at once instead of being resent after a slot
 * refresh: the runner redelivers the operation. The offline queue stays on: ioredis opens a node's connection at
 * its first command and queues the commands sent while it connects, and a command waiting there has not been
 * sent, so it runs once.
 */
export const LAB_CLUSTER_OPTIONS: ClusterOptions = {
  retryDelayOnFailover: 0,
  retryDelayOnClusterDown: 0,
  redisOptions: { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false },
};

const epochs = new WeakMap<Redis, number>();

/** Counts the connection's closes from now on (see connectionEpoch); once per connection. */
function trackEpochs(conn: Redis): void {
  if (epochs.has(conn)) return;
  epochs.set(conn, 0);
  conn.on("close", () => epochs.set(conn, (epochs.get(conn) ?? 0) + 1));
}

/** A connection with the scripts defined, once it is ready; counts its reconnects (see connectionEpoch). */
export async function readyLabConnection<T extends RedisClient>(conn: T): Promise<T> {
  defineLabScripts(conn);
  if (conn instanceof Redis) trackEpochs(conn);
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

/**
 * Changes whenever the connection closed (and maybe reconnected): WATCH state does not survive that. Counting
 * starts at the first call for a connection the lab did not open itself (a cluster's node connection).
 */
export function connectionEpoch(conn: Redis): number {
  trackEpochs(conn);
  return epochs.get(conn) ?? 0;
}

/** A lab connection to one server (a URL) or to a Redis Cluster, routing by key. */
export function createLabConnection(url: string): Promise<Redis>;
export function createLabConnection(target: string | RedisTarget): Promise<RedisClient>;
export function createLabConnection(target: string | RedisTarget): Promise<RedisClient> {
  if (typeof target !== "string" && isClusterTarget(target)) {
    return readyLabConnection(
      new Cluster(seedNodes(target.clusterNodes), {
        ...LAB_CLUSTER_OPTIONS,
        redisOptions: { ...LAB_CLUSTER_OPTIONS.redisOptions, ...clusterNodeOptions(target) },
      }),
    );
  }
  return readyLabConnection(new Redis(typeof target === "string" ? target : target.url, LAB_REDIS_OPTIONS));
}

declare module "ioredis" {
  interface RedisCommander<Context> {
    labReleaseLock(key: string, token: string): Result<0 | 1, Context>;
    labRenewLock(key: string, token: string, ttlMs: number): Result<0 | 1, Context>;
  }
}
