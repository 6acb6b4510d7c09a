import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { inject } from "vitest";
import type { LabStrategyName, LabWorkload } from "../contracts/lab.ts";
import {
  createRedis,
  describeRedisTarget,
  isCluster,
  isClusterTarget,
  keySlot,
  type RedisClient,
} from "../redis/client.ts";
import { counterKeys, userKeys, userLockKey } from "../redis/keys.ts";
import { testSeed } from "../testing/random.ts";
import { openLabRedis, scanKeys, type LabRedis } from "./lab-redis.ts";
import { resolveWorkload } from "./params.ts";
import { runStrategy } from "./runner.ts";
import { createStrategy } from "./strategies/index.ts";
import type { OpHooks, OpStats } from "./strategies/types.ts";
import { Truth, type LabOp } from "./workload.ts";

/**
 * The strategies on the Redis the app under test uses: one redis-server (project "int") or a Redis Cluster of
 * 3 masters and 3 replicas (project "int-cluster"), where each worker's connection routes by slot and WATCH runs
 * on the connection to the user's master.
 */
const target = inject("redisTarget");
const seed = testSeed() % 2 ** 31;

let app: RedisClient;
let labRedis: LabRedis;
/** A lab connection for the checks: it sees what the workers wrote. */
let conn: RedisClient;
const prefix = () => `lab:t${randomBytes(4).toString("hex")}:`;

beforeAll(async () => {
  app = createRedis(target);
  // One server: the lab as it runs on the app's Redis when redis-server is missing. A cluster: the lab given it.
  labRedis = isClusterTarget(target)
    ? await openLabRedis({ cluster: target })
    : await openLabRedis({ shared: app, forceShared: true });
  conn = await labRedis.connect();
});

afterAll(async () => {
  await labRedis?.close();
  app?.disconnect();
});

beforeEach(({ onTestFailed }) => {
  onTestFailed(() =>
    console.error(`lab run on ${describeRedisTarget(target)} failed; replay its workload with TEST_SEED=${seed}`),
  );
});

// Longer than any test step takes on a busy machine: a lease runs out only when a test shortens it.
const LEASE = 60_000;

const workload = (faults: Partial<LabWorkload["faults"]>, operations = 600) =>
  resolveWorkload({ users: 12, conversationsPerUser: 3, workers: 8, operations, seed, faults, lock: { ttlMs: LEASE } });

/**
 * Runs a strategy's seeded workload, then checks where its keys went: each in the slot of the user its hash tag
 * names and, on a cluster, the users' keys spread over more than one master. Deletes them afterwards.
 */
async function run(name: LabStrategyName, w: LabWorkload) {
  const p = prefix();
  const { result } = await runStrategy({ name, workload: w, labRedis, prefix: p });
  const keys: string[] = [];
  for await (const page of scanKeys(conn, p)) keys.push(...page);
  expect(keys.length).toBeGreaterThan(0);
  for (const key of keys) expect(keySlot(key), key).toBe(keySlot(`{u:${/\{u:(\d+)\}/.exec(key)?.[1]}}`));
  if (isCluster(conn)) {
    const cluster = conn;
    expect(new Set(keys.map((key) => cluster.slots[keySlot(key)]?.[0])).size).toBeGreaterThan(1);
  }
  await labRedis.deleteKeys(p);
  return result;
}

describe(`runs on ${isClusterTarget(target) ? "a Redis Cluster" : "one redis-server"}`, () => {
  it("naive: detects the drift a delay between the two writes leaves when a read races a send", async () => {
    const result = await run("naive", workload({ stepDelayMs: 3, stepDelayRate: 1 }));
    expect(result.drift.users).toBeGreaterThan(0);
  });

  it.each([
    ["lock", "delays between the two writes", { stepDelayMs: 2, stepDelayRate: 0.2 }],
    [
      "watch",
      "delays, failed steps and dead workers between the reads and EXEC",
      { stepDelayMs: 2, stepDelayRate: 0.2, stepFailureRate: 0.05, workerDeathRate: 0.01 },
    ],
  ] as const)("%s: keeps the badge equal to the sum of its parts under concurrency and %s", async (name, _, faults) => {
    const result = await run(name, workload(faults));
    expect(result).toMatchObject({ completed: 600, lost: 0 });
    expect(result.drift).toEqual({ users: 0, amount: 0 });
  });

  it("lua: stays exact through failed steps, delays and dead workers", async () => {
    const result = await run(
      "lua",
      workload({ stepFailureRate: 0.05, stepDelayMs: 2, stepDelayRate: 0.1, workerDeathRate: 0.01 }, 1500),
    );
    expect(result.aborted).toBeGreaterThan(0);
    expect(result).toMatchObject({ completed: 1500, lost: 0 });
    expect(result.drift).toEqual({ users: 0, amount: 0 });
    expect(result.wrong).toEqual({ counts: 0, totals: 0 });
  });
});

const watchStrategy = (p: string, maxRetries: number) =>
  createStrategy("watch", {
    prefix: p,
    truth: new Truth(1, 1),
    lock: { ttlMs: 100, watchdog: false, maxAttempts: 1 },
    watch: { maxRetries },
  });
const send: LabOp = { index: 0, kind: "send", userId: 1, conversationId: 1, seq: 1 };
const newStats = (): OpStats => ({ retries: 0, lockWaits: 0 });
const quiet: OpHooks = { gap: async () => undefined };

describe("the WATCH strategy", () => {
  it("retries when a watched key is written between its reads and EXEC, and applies on fresh values", async () => {
    const p = prefix();
    const strategy = watchStrategy(p, 3);
    const k = counterKeys(1, p);
    const other = await labRedis.connect();
    let gaps = 0;
    const stats = newStats();
    await strategy.apply(
      conn,
      send,
      {
        gap: async () => {
          // Another client adds 5 messages while this one is between its reads and EXEC.
          if (gaps++ === 0) await other.multi().hincrby(k.unread, "1", 5).hincrby(k.meta, "total", 5).exec();
        },
      },
      stats,
    );
    other.disconnect();
    expect(stats.retries).toBe(1);
    expect(gaps).toBe(2);
    expect(await conn.hget(k.unread, "1")).toBe("6");
    expect(await conn.hget(k.meta, "total")).toBe("6");
  });

  it("gives up after its retry bound", async () => {
    const p = prefix();
    const k = counterKeys(1, p);
    const stats = newStats();
    await expect(
      watchStrategy(p, 2).apply(conn, send, { gap: async () => void (await app.hincrby(k.meta, "noise", 1)) }, stats),
    ).rejects.toThrow(/conflicted 3 times/);
    expect(stats.retries).toBe(3);
  });

  it.runIf(isClusterTarget(target))(
    "on a master that no longer serves the user's slot: fails with MOVED, refreshes the slot table, and the redelivery commits",
    async () => {
      if (!isCluster(conn)) throw new Error("expected a cluster connection");
      const cluster = conn;
      const p = prefix();
      const strategy = watchStrategy(p, 3);
      const k = counterKeys(1, p);
      const slot = keySlot(k.meta);
      const owner = cluster.slots[slot]![0]!;
      const elsewhere = cluster
        .nodes("master")
        .map((n) => `${n.options.host}:${n.options.port}`)
        .find((node) => node !== owner)!;
      // The slot table of a client that has not heard of a resharding yet.
      cluster.slots[slot] = [elsewhere];
      await expect(strategy.apply(cluster, send, quiet, newStats())).rejects.toThrow(/^MOVED /);
      await expect.poll(() => cluster.slots[slot]?.[0]).toBe(owner);
      await strategy.apply(cluster, send, quiet, newStats());
      expect(await cluster.hget(k.unread, "1")).toBe("1");
      expect(await cluster.hget(k.meta, "total")).toBe("1");
    },
  );
});

describe("cleanup", () => {
  it("deletes the run's keys wherever they live, and only those", async () => {
    const p = prefix();
    const users = Array.from({ length: 12 }, (_, i) => i + 1);
    for (const id of users) {
      await conn.hset(userKeys(id, p).meta, "total", 1);
      await conn.set(userLockKey(id, p), "x");
    }
    await conn.set("lab:someone-else:{u:1}:meta", "x");
    expect(await labRedis.deleteKeys(p)).toBe(2 * users.length);
    expect(await conn.exists("lab:someone-else:{u:1}:meta")).toBe(1);
    await conn.del("lab:someone-else:{u:1}:meta");
  });
});
