import type { Db } from "../../db/prisma.ts";
import { startRedisCluster } from "../../embedded/redis-cluster.ts";
import { createRedis, isCluster, keySlot, type RedisClient } from "../../redis/client.ts";
import { rebuildScriptKeys, unreadScriptKeys, userKeys } from "../../redis/keys.ts";
import { scripts } from "../../redis/scripts.ts";
import { createUnreadService, type UnreadEvent } from "../../unread/unread.service.ts";
import { rng } from "../rng.ts";
import { applyManyRate, redisBenchmark, type BenchLoad, type BenchRun } from "./ceiling.ts";

export interface ClusterNodeRate {
  port: number;
  /** redis-benchmark EVALSHA apply.lua on this master alone, calls/s. */
  alonePerSec: number | null;
  /** The same while every master is benchmarked at once. */
  togetherPerSec: number | null;
}

export interface ClusterResult {
  masters: number;
  replicasPerMaster: number;
  clients: number;
  pipeline: number;
  requests: number;
  nodes: ClusterNodeRate[];
  /** Σ togetherPerSec: the cluster's raw apply.lua rate with every master busy at once. */
  togetherPerSec: number | null;
  /** Tally's fan-out (unread.applyMany, `fanout` members a call) on the cluster: pipelines grouped per node. */
  fanout: number;
  users: number;
  clusterFanoutPerSec: number;
  /** The same fan-out on one redis-server. */
  singleFanoutPerSec: number;
  note?: string;
}

const PREFIX = "lab:bench:cluster:";

/**
 * apply.lua's rate per master of a local Redis Cluster (3 masters + 3 replicas): each master alone, then all at
 * once (redis-benchmark against each master with a user whose slot it serves), and Tally's own fan-out path
 * (applyMany: one pipeline per node) on the cluster against the same on one redis-server. On a 2-core machine the
 * masters, their replicas and redis-benchmark share the cores, so "all at once" shows the machine's limit, not the
 * cluster's.
 */
export async function measureCluster(opts: {
  dir: string;
  /** The bench's single redis-server, for the comparison. */
  single: RedisClient;
  db: Db;
  requests?: number;
  log: (line: string) => void;
}): Promise<ClusterResult> {
  const clients = 50;
  const pipeline = 16;
  const requests = opts.requests ?? 200_000;
  const fanout = 20;
  const users = 600;
  opts.log("cluster: starting a local Redis Cluster (3 masters + 3 replicas)…");
  const cluster = await startRedisCluster({ dir: opts.dir });
  const redis = createRedis({ clusterNodes: cluster.nodes });
  try {
    if (!isCluster(redis)) throw new Error("expected a cluster client");
    await redis.ping();
    const masters = redis.nodes("master").map((n) => ({ host: n.options.host!, port: n.options.port! }));
    // A user whose slot each master serves.
    const servedBy = (id: number) => redis.slots[keySlot(userKeys(id, PREFIX).meta)]?.[0];
    const userOn = masters.map((m) => {
      for (let id = 1; ; id++) if (servedBy(id) === `${m.host}:${m.port}`) return id;
    });
    for (const id of userOn) await redis.tallyRebuild(...rebuildScriptKeys(id, PREFIX), "bench", "merge");
    const sha = (await Promise.all(
      redis.nodes("master").map((n) => n.script("LOAD", scripts.tallyApply.lua)),
    )) as string[];
    const load = (m: { host: string; port: number }): BenchLoad => ({
      ...m,
      clients,
      pipeline,
      requests,
      keyspace: 50,
    });
    const run = (i: number) =>
      redisBenchmark(load(masters[i]!), sha[i]!, unreadScriptKeys(userOn[i]!, PREFIX), [
        "__rand_int__",
        "__rand_int__",
        "0",
      ]);
    opts.log("cluster: apply.lua on each master alone, then on all at once…");
    const alone: BenchRun[] = [];
    for (let i = 0; i < masters.length; i++) alone.push(await run(i));
    const together = await Promise.all(masters.map((_, i) => run(i)));
    const note = [...alone, ...together].find((r) => r.note)?.note;

    opts.log(`cluster: Tally's fan-out (${fanout} members a message) on the cluster and on one redis-server…`);
    const fanoutRate = async (target: RedisClient) => {
      for (let id = 1; id <= users; id++) await target.tallyRebuild(...rebuildScriptKeys(id, PREFIX), "bench", "merge");
      const unread = createUnreadService({ redis: target, db: opts.db, prefix: PREFIX });
      const random = rng(7);
      const seq = new Map<number, number>();
      const message = (): UnreadEvent[] => {
        const conversationId = Math.floor(random() * 1000);
        const next = (seq.get(conversationId) ?? 0) + 1;
        seq.set(conversationId, next);
        return Array.from({ length: fanout }, () => ({
          userId: 1 + Math.floor(random() * users),
          conversationId,
          seenSeq: next,
          readSeq: 0,
        }));
      };
      return applyManyRate(unread, message, Math.ceil(requests / fanout), clients);
    };
    const clusterFanoutPerSec = await fanoutRate(redis);
    const singleFanoutPerSec = await fanoutRate(opts.single);
    return {
      masters: masters.length,
      replicasPerMaster: 1,
      clients,
      pipeline,
      requests,
      nodes: masters.map((m, i) => ({
        port: m.port,
        alonePerSec: alone[i]!.perSec,
        togetherPerSec: together[i]!.perSec,
      })),
      togetherPerSec: together.every((r) => r.perSec !== null) ? together.reduce((a, r) => a + r.perSec!, 0) : null,
      fanout,
      users,
      clusterFanoutPerSec,
      singleFanoutPerSec,
      ...(note ? { note } : {}),
    };
  } finally {
    redis.disconnect();
    await cluster.stop();
  }
}
