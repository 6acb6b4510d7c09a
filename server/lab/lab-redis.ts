import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Redis } from "ioredis";
import { isCluster, type RedisClient } from "../redis/client.ts";
import { REDIS_SERVER_MISSING, startRedisServer, type RedisServer } from "../embedded/redis.ts";
import { createLabConnection, LAB_REDIS_OPTIONS, readyLabConnection } from "./scripts.ts";

/** The Redis a lab run works on: its own redis-server when possible, else the app's Redis under a prefix. */
export interface LabRedis {
  kind: "private" | "shared";
  /** Why a fault is unavailable, say; shown to the presenter. */
  notices: string[];
  /** A new, ready connection with the production and lab scripts defined; closed by close(). */
  connect(): Promise<Redis>;
  /** Stops the private redis-server and starts an empty one on the same port; absent when shared. */
  restart?: () => Promise<void>;
  /** Deletes the keys under `prefix`, and only those (SCAN + UNLINK). */
  deleteKeys(prefix: string): Promise<number>;
  close(): Promise<void>;
}

export const RESTART_UNAVAILABLE =
  "redis-server is not installed, so the lab runs on the app's Redis under its own key prefix and the " +
  '"Redis restart" fault is off (restarting the app\'s Redis would hurt the chat).';

/**
 * Starts a private, throw-away redis-server for a lab run (nothing persisted, a free port); when the binary is
 * missing and `shared` is given, falls back to that Redis. Chat data is never touched either way: the run's
 * keys carry the prefix `lab:<run>:<strategy>:` and only those are deleted.
 */
export async function openLabRedis(opts: { shared?: RedisClient; forceShared?: boolean } = {}): Promise<LabRedis> {
  const connections = new Set<Redis>();
  const track = async (pending: Promise<Redis>): Promise<Redis> => {
    const conn = await pending;
    connections.add(conn);
    conn.once("end", () => connections.delete(conn));
    return conn;
  };
  const closeConnections = () => Promise.allSettled([...connections].map((c) => c.quit().catch(() => c.disconnect())));

  let server: RedisServer | undefined;
  let dir: string | undefined;
  if (!opts.forceShared) {
    dir = await mkdtemp(path.join(os.tmpdir(), "tally-lab-"));
    try {
      server = await startRedisServer({ dir });
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      dir = undefined;
      if (!(err instanceof Error && err.message === REDIS_SERVER_MISSING) || !opts.shared) throw err;
    }
  }

  if (server) {
    const running = server;
    const url = running.url;
    return {
      kind: "private",
      notices: [],
      connect: () => track(createLabConnection(url)),
      restart: () => running.restart(),
      deleteKeys: async (prefix) => deleteKeys(await createLabConnection(url), prefix, true),
      async close() {
        await closeConnections();
        await running.stop();
        if (dir) await rm(dir, { recursive: true, force: true });
      },
    };
  }

  const shared = opts.shared;
  if (!shared) throw new Error("openLabRedis: no redis-server and no shared Redis");
  if (isCluster(shared)) throw new Error("openLabRedis: the lab needs redis-server to run beside a Redis Cluster");
  const connect = () => track(readyLabConnection(shared.duplicate(LAB_REDIS_OPTIONS)));
  return {
    kind: "shared",
    notices: opts.forceShared ? [] : [RESTART_UNAVAILABLE],
    connect,
    deleteKeys: async (prefix) => deleteKeys(await connect(), prefix, true),
    close: async () => void (await closeConnections()),
  };
}

/** SCAN MATCH `<prefix>*` and UNLINK what it finds; the prefix is escaped, so it matches literally. */
export async function deleteKeys(conn: Redis, prefix: string, quit = false): Promise<number> {
  if (!/^lab:/.test(prefix)) throw new Error(`refusing to delete keys outside the lab's space: ${prefix}`);
  const pattern = `${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`;
  let deleted = 0;
  try {
    let cursor = "0";
    do {
      const [next, keys] = await conn.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) deleted += await conn.unlink(...keys);
    } while (cursor !== "0");
  } finally {
    if (quit) await conn.quit().catch(() => conn.disconnect());
  }
  return deleted;
}
