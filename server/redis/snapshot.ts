import { isCluster, type RedisClient } from "./client.ts";
import type { UnreadScriptKeys } from "./keys.ts";
import { SNAPSHOT_META_FIELDS, snapshotOfRecords, type SnapshotRead } from "./scripts.ts";

/**
 * What snapshot.lua answers without expiry, read without the script: the meta and every record in one MULTI (one
 * instant's state, as the script's), and on a cluster node its replication id (INFO in the same transaction, so
 * from the node that holds the keys), checked and listed by snapshotOfRecords. Null: only the script can answer
 * (state stamped by another term, or written before stamps). A big user's records would otherwise be parsed inside
 * Redis, which every user waits on (docs/benchmarks.md, "A sixth look").
 */
export async function readPlainSnapshot(
  redis: RedisClient,
  [meta, convs]: UnreadScriptKeys,
): Promise<SnapshotRead | null> {
  const cluster = isCluster(redis);
  const tx = redis
    .multi()
    .hmget(meta, ...SNAPSHOT_META_FIELDS)
    .hgetall(convs);
  if (cluster) tx.info("replication");
  const results = await tx.exec();
  if (!results) throw new Error("snapshot: the read was aborted"); // only a WATCH aborts one, and none is set
  for (const [err] of results) if (err) throw err;
  const [[, metaValues], [, records], info] = results as [
    [null, (string | null)[]],
    [null, Record<string, string>],
    [null, string]?,
  ];
  const nodeTerm = cluster ? (/master_replid:(\w+)/.exec(info?.[1] ?? "")?.[1] ?? null) : null;
  return snapshotOfRecords(metaValues, records, nodeTerm);
}
