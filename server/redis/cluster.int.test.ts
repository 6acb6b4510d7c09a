import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { startHarness, type Harness } from "../testing/harness.ts";
import { groupByNode, isCluster, isClusterTarget, keySlot } from "./client.ts";
import { userKeys } from "./keys.ts";

/** What only a cluster has: pipelines split per node, and pushes over sharded pub/sub. Project "int-cluster". */
describe.skipIf(!isClusterTarget(inject("redisTarget")))("on a Redis Cluster", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(2);
  });
  afterAll(async () => {
    await h?.close();
  });

  it("groups a fan-out's keys into one pipeline per master, each holding only that master's slots", async () => {
    const redis = h.redis;
    if (!isCluster(redis)) throw new Error("expected a cluster client");
    await redis.ping(); // the slot table is loaded once connected
    const users = Array.from({ length: 60 }, (_, i) => i + 1);
    const groups = groupByNode(redis, users, (id) => userKeys(id).meta);
    const masters = redis.nodes("master").map((n) => `${n.options.host}:${n.options.port}`);
    expect(groups).toHaveLength(masters.length);
    expect(groups.flat().sort((a, b) => a - b)).toEqual(users);
    const servedBy = (id: number) => redis.slots[keySlot(userKeys(id).meta)]![0];
    for (const group of groups) expect(new Set(group.map(servedBy)).size).toBe(1);
  });

  it("pushes over sharded pub/sub: the instances subscribe one shard channel per user room", async () => {
    const redis = h.redis;
    if (!isCluster(redis)) throw new Error("expected a cluster client");
    const ann = await h.signUp("shard-ann");
    const socket = await h.connect(ann.token, 1);
    // The instance subscribes the room's shard channel once the socket has joined it.
    const shardChannels = async () =>
      (
        await Promise.all(redis.nodes("master").map((n) => n.call("PUBSUB", "SHARDCHANNELS") as Promise<string[]>))
      ).flat();
    await expect.poll(shardChannels).toContain(`socket.io#/#user:${ann.user.id}#`);
    socket.disconnect();
  });
});
