import type { RedisClient } from "../redis/client.ts";
import { userKeys } from "../redis/keys.ts";
import { formatRecord, parseRecord, type ConversationRecord } from "../redis/scripts.ts";

/**
 * The replication id (INFO's master_replid) of the node serving `key`'s slot, read inside a script as fence.lua
 * reads it: the term a rebuild there stamps.
 */
export async function replicationTerm(redis: RedisClient, key: string): Promise<string> {
  return String(
    await redis.eval("return string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)')", 1, key),
  );
}

/**
 * Rewrites fields of one conversation's record as drift from outside the scripts would (a lost write, a bug, a
 * hand edit): the scripts never write a record this way. Returns the record as it was.
 */
export async function patchRecord(
  redis: RedisClient,
  userId: number,
  conversationId: number | string,
  patch: Partial<ConversationRecord>,
): Promise<ConversationRecord> {
  const key = userKeys(userId).convs;
  const before = parseRecord(await redis.hget(key, String(conversationId)));
  const raw = formatRecord({ ...before, ...patch });
  await (raw ? redis.hset(key, String(conversationId), raw) : redis.hdel(key, String(conversationId)));
  return before;
}

/** One conversation's record as stored (every field 0 when it has none). */
export async function recordOf(
  redis: RedisClient,
  userId: number,
  conversationId: number | string,
): Promise<ConversationRecord> {
  return parseRecord(await redis.hget(userKeys(userId).convs, String(conversationId)));
}

/**
 * What a Redis Cluster answers while a master fails over (CLUSTERDOWN, a refused or closed connection) or a slot
 * migrates (TRYAGAIN), also as the last error ioredis names once its own retries (64 × 100 ms) have run out.
 */
const FAILOVER_ERROR = /\b(CLUSTERDOWN|TRYAGAIN)\b|Connection is closed|ECONNREFUSED/;

export function isFailoverError(err: unknown): boolean {
  return err instanceof Error && FAILOVER_ERROR.test(err.message);
}

export interface FailoverWait {
  /** How long after the first try a failover error is still tried again (a test cluster fails over in seconds). */
  waitMs?: number;
  pauseMs?: number;
  clock?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Runs `read`, a read the test harness makes for its own checks (so safe to repeat), again while the cluster answers
 * as it does during a failover or a migration: one that outlasts ioredis' retries (a replica slow to take over, a
 * node starved past cluster-node-timeout) must not end the run. Any other error, or a cluster still down `waitMs`
 * after the first try, is thrown.
 */
export async function readThroughFailover<T>(read: () => Promise<T>, wait: FailoverWait = {}): Promise<T> {
  const { waitMs = 10_000, pauseMs = 250, clock = Date.now } = wait;
  const sleep = wait.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const deadline = clock() + waitMs;
  for (;;) {
    try {
      return await read();
    } catch (err) {
      if (!isFailoverError(err) || clock() >= deadline) throw err;
      await sleep(pauseMs);
    }
  }
}
