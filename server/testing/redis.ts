import type { RedisClient } from "../redis/client.ts";

/**
 * The replication id (INFO's master_replid) of the node serving `key`'s slot, read inside a script as fence.lua
 * reads it: the term a rebuild there stamps.
 */
export async function replicationTerm(redis: RedisClient, key: string): Promise<string> {
  return String(
    await redis.eval("return string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)')", 1, key),
  );
}
