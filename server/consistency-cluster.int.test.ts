import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { MessageDTO, Snapshot } from "./contracts/index.ts";
import { startRedisCluster, type LocalRedisCluster } from "./embedded/redis-cluster.ts";
import { isCluster, keySlot } from "./redis/client.ts";
import { userKeys } from "./redis/keys.ts";
import { connectSocket, TEST_PASSWORD, type ClientSocket } from "./testing/harness.ts";
import { testSeed } from "./testing/random.ts";
import { expectClean, runChecked } from "./testing/sim/checked.ts";
import { CLUSTER_FAULTS, createSimEnvironment, type SimEnvironment } from "./testing/sim/simulation.ts";

/**
 * The fault model on a Redis Cluster of its own (3 masters + 3 replicas: this file kills and reshards it, so not the
 * run's shared one) with two instances behind HAProxy, the way `npm run start:cluster -- --redis-cluster` runs.
 */
let dir: string;
let cluster: LocalRedisCluster;
let env: SimEnvironment;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "tally-cluster-round-"));
  cluster = await startRedisCluster({ dir, nodeTimeoutMs: 1000 });
  env = await createSimEnvironment({
    adminUrl: inject("pgAdminUrl"),
    cluster,
    balancer: true,
    instances: 2,
    withCrasher: true,
  });
}, 180_000);

afterAll(async () => {
  await env?.close();
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
}, 60_000);

const seed = testSeed();

describe("on a Redis Cluster behind HAProxy", () => {
  it("rebuilds a user's state from the database at a new epoch once the replica of their master is promoted", async () => {
    await env.freshRound();
    const url = env.balancer!.url;
    const post = async <T>(route: string, body: unknown, token?: string) => {
      const res = await fetch(`${url}${route}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
      return (await res.json()) as T;
    };
    type Session = { token: string; user: { id: number; name: string } };
    const ann = await post<Session>("/api/users", { name: "failover-ann", password: TEST_PASSWORD });
    const bob = await post<Session>("/api/users", { name: "failover-bob", password: TEST_PASSWORD });
    const { conversation } = await post<{ conversation: { id: number } }>(
      "/api/conversations",
      { memberNames: [ann.user.name] },
      bob.token,
    );
    const sockets: ClientSocket[] = [];
    const bobSocket = await connectSocket<ClientSocket>(url, bob.token, sockets);
    for (const n of [1, 2]) {
      const sent = (await bobSocket.timeout(10_000).emitWithAck("message:send", {
        conversationId: conversation.id,
        clientMsgId: `fo-${n}`,
        content: `m${n}`,
      })) as {
        ok: boolean;
        message?: MessageDTO;
      };
      expect(sent.ok).toBe(true);
    }
    const sync = async () => {
      const socket = await connectSocket<ClientSocket>(url, ann.token, sockets);
      const res = (await socket.timeout(30_000).emitWithAck("sync")) as { ok: boolean; snapshot: Snapshot };
      socket.disconnect();
      expect(res.ok).toBe(true);
      return res.snapshot;
    };
    const before = await sync();
    expect(before.totalUnread).toBe(2);

    // The master serving ann's slot dies; its replica takes over with whatever it had replicated.
    const redis = env.redis;
    if (!isCluster(redis)) throw new Error("expected a cluster client");
    const master = redis.slots[keySlot(userKeys(ann.user.id).meta)]![0]!;
    const { killed } = await cluster.killMaster(Number(master.split(":").at(-1)));
    await cluster.restartNode(killed);

    // Not continued from the replica's copy: rebuilt from the database, so every tab takes a snapshot.
    const after = await sync();
    expect(after.epoch).not.toBe(before.epoch);
    expect({ total: after.totalUnread, version: after.version }).toEqual({ total: 2, version: 1 });
    const term = await redis.eval(
      "return string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)')",
      1,
      userKeys(ann.user.id).meta,
    );
    expect(await redis.hget(userKeys(ann.user.id).meta, "term")).toBe(term);
    for (const s of sockets) s.disconnect();
  }, 120_000);

  it("loses no message, read, mute or mark and drifts nowhere with masters killed, slots resharded, instances killed behind the balancer, FLUSHALL and crashes after commit", async () => {
    const report = await runChecked(env, { seed, ops: 250, faultRate: 0.02, everyFault: true });
    expectClean(report);
    for (const fault of CLUSTER_FAULTS) expect(report.faults[fault], fault).toBeGreaterThan(0);
    expect(report.acknowledgedMessages).toBeGreaterThan(40);
  }, 900_000);
});
