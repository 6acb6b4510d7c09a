import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { groupBySlot, isCluster, type RedisClient } from "../redis/client.ts";
import { REDIS_SERVER_MISSING, startRedisServer, type RedisServer } from "../embedded/redis.ts";
import { createLabConnection, LAB_REDIS_OPTIONS, readyLabConnection } from "./scripts.ts";

/**
 * The Redis a lab run works on: its own redis-server when possible, else the app's Redis under a prefix; or a
 * Redis Cluster it is given (a connection then routes each command by its key's slot).
 */
export interface LabRedis {
  kind: "private" | "shared" | "cluster";
  /** Why a fault is unavailable, say; shown to the presenter. */
  notices: string[];
  /** A new, ready connection with the production and lab scripts defined; closed by close(). */
  connect(): Promise<RedisClient>;
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
 * missing and `shared` is given, falls back to that Redis. Given `cluster` (its nodes, REDIS_CLUSTER_NODES'
 * form), runs on that Redis Cluster instead and starts nothing. Chat data is never touched either way: the
 * run's keys carry the prefix `lab:<run>:<strategy>:` and only those are deleted.
 */
export async function openLabRedis(
  opts: { shared?: RedisClient; forceShared?: boolean; cluster?: { clusterNodes: string[] } } = {},
): Promise<LabRedis> {
  const connections = new Set<RedisClient>();
  const track = async (pending: Promise<RedisClient>): Promise<RedisClient> => {
    const conn = await pending;
    connections.add(conn);
    conn.once("end", () => connections.delete(conn));
    return conn;
  };
  const closeConnections = () => Promise.allSettled([...connections].map((c) => c.quit().catch(() => c.disconnect())));

  const cluster = opts.cluster;
  if (cluster) {
    return {
      kind: "cluster",
      notices: [],
      connect: () => track(createLabConnection(cluster)),
      deleteKeys: async (prefix) => deleteKeys(await createLabConnection(cluster), prefix, true),
      close: async () => void (await closeConnections()),
    };
  }

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

/**
 * SCAN MATCH `<prefix>*` and UNLINK what it finds; the prefix is escaped, so it matches literally. On a cluster
 * the keys are unlinked one slot at a time (a command's keys share a slot).
 */
export async function deleteKeys(conn: RedisClient, prefix: string, quit = false): Promise<number> {
  if (!/^lab:/.test(prefix)) throw new Error(`refusing to delete keys outside the lab's space: ${prefix}`);
  let deleted = 0;
  try {
    for await (const keys of scanKeys(conn, prefix)) {
      for (const group of isCluster(conn) ? groupBySlot(keys, (key) => key) : [keys])
        deleted += await conn.unlink(...group);
    }
  } finally {
    if (quit) await conn.quit().catch(() => conn.disconnect());
  }
  return deleted;
}

/** The keys under `prefix` (matched literally), a SCAN page at a time; on a cluster, every master's. */
export async function* scanKeys(conn: RedisClient, prefix: string): AsyncGenerator<string[]> {
  const pattern = `${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`;
  for (const node of isCluster(conn) ? conn.nodes("master") : [conn]) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) yield keys;
    } while (cursor !== "0");
  }
}
