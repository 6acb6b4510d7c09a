import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
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
