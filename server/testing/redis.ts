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
