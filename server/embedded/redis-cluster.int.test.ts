import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Redis, type Cluster } from "ioredis";
import { createRedis, keySlot } from "../redis/client.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRedisCluster, type LocalRedisCluster } from "./redis-cluster.ts";

let dir: string;
let cluster: LocalRedisCluster;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "tally-cluster-failover-"));
  cluster = await startRedisCluster({ dir, nodeTimeoutMs: 1000, failoverTimeoutMs: 5000 });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
}, 60_000);

async function config(port: number, name: string, value: string): Promise<void> {
  const redis = new Redis({ port, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await redis.config("SET", name, value);
  } finally {
    redis.disconnect();
  }
}

describe("killMaster on a local Redis Cluster", () => {
  it("promotes the replica with CLUSTER FAILOVER TAKEOVER when none is elected, and says why", async () => {
    const nodes = await cluster.describe();
    const master = nodes.find((n) => n.role === "master" && n.slots > 0)!;
    const replica = nodes.find((n) => n.masterId === master.id)!;
    // A replica that never starts an election of its own: the state CI once met after a fault model's run.
    await config(replica.port, "cluster-replica-no-failover", "yes");
    try {
      const failover = await cluster.killMaster(master.port);

      expect(failover).toMatchObject({ killed: master.port, promoted: replica.port });
      expect(failover.forced).toContain(`timed out after 5000 ms waiting for a replica of ${master.port} to take over`);
      // What every node saw, and the replica's own replication state, for whoever reads the warning.
      expect(failover.forced).toContain(`node ${replica.port} sees:`);
      expect(failover.forced).toContain(`node ${replica.port} replication:`);
      const after = await cluster.describe();
      expect(after.find((n) => n.port === replica.port)).toMatchObject({ role: "master", failed: false });
      expect(after.find((n) => n.port === master.port)?.failed).toBe(true);
    } finally {
      await config(replica.port, "cluster-replica-no-failover", "no");
      await cluster.restartNode(master.port);
    }
  }, 120_000);
});

describe("Tally's cluster client and a master that stops answering with its connections open (its process paused)", () => {
  it("fails a command to its slot while no replica takes over, and answers from the replica that does", async () => {
    const redis = createRedis({ clusterNodes: cluster.nodes }) as Cluster;
    redis.on("error", () => undefined);
    const nodes = await cluster.describe();
    const master = nodes.find((n) => n.role === "master" && n.slots > 0 && !n.failed)!;
    const replica = nodes.find((n) => n.masterId === master.id)!;
    let pid: number | undefined;
    try {
      await redis.set("paused:probe", "1"); // the slot map is loaded
      const key = Array.from({ length: 1000 }, (_, i) => `paused:{${i}}`).find(
        (k) => redis.slots[keySlot(k)]?.[0] === `127.0.0.1:${master.port}`,
      )!;
      await redis.set(key, "kept");
      const node = new Redis({ port: master.port, maxRetriesPerRequest: 0, retryStrategy: () => null });
      try {
        expect(await node.call("WAIT", "1", "5000")).toBe(1); // its replica has it
        pid = Number(/process_id:(\d+)/.exec(await node.info("server"))![1]);
      } finally {
        node.disconnect();
      }
      await config(replica.port, "cluster-replica-no-failover", "yes");
      process.kill(pid, "SIGSTOP");
      const within30s = <T>(promise: Promise<T>) =>
        Promise.race([
          promise,
          new Promise<string>((resolve) => setTimeout(() => resolve("still waiting after 30 s"), 30_000).unref()),
        ]);
      // Nobody answers for the slot: the command fails (the caller answers `unavailable`). Before the socketTimeout
      // it waited for good, on a connection that stayed open.
      expect(await within30s(redis.get(key).catch((err: Error) => err.message))).toMatch(
        /^Redis Cluster unavailable for \d+ ms of this command\./,
      );
      // The replica takes over (ioredis alone also got there, its slot refresh dropping the failed master).
      await config(replica.port, "cluster-replica-no-failover", "no");
      await expect
        .poll(() => within30s(redis.get(key).catch((err: Error) => err.message)), { timeout: 60_000 })
        .toBe("kept");
    } finally {
      await config(replica.port, "cluster-replica-no-failover", "no").catch(() => undefined);
      if (pid !== undefined) process.kill(pid, "SIGCONT");
      redis.disconnect();
      await cluster.settle();
    }
  }, 180_000);
});
