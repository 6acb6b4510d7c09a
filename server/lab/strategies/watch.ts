import type { Redis } from "ioredis";
import { isCluster, isRedirection, masterConnection } from "../../redis/client.ts";
import { counterKeys } from "../../redis/keys.ts";
import type { LabOp } from "../workload.ts";
import { connectionEpoch } from "../scripts.ts";
import {
  GaveUp,
  MUTED,
  readCounters,
  type OpHooks,
  type OpStats,
  type Strategy,
  type StrategyContext,
} from "./types.ts";

/**
 * Optimistic transactions: WATCH the user's keys, read the counters, write the new values with MULTI/EXEC.
 * EXEC answers nil when another client wrote a watched key in between; the operation then starts over, up to
 * `maxRetries` times. Both writes land together or not at all.
 *
 * WATCH state belongs to a connection, and a cluster client routes each command by itself: on a cluster the
 * whole transaction runs on the client's connection to the master of the user's slot (all of the user's keys
 * share it). A MOVED or ASK from that master means the slot table is out of date: it is refreshed and the
 * error thrown, so the operation is redelivered whole, as for any other failure.
 */
export function watchStrategy(ctx: StrategyContext): Strategy {
  return {
    name: "watch",
    prepare: async () => undefined,
    async apply(conn, op, hooks, stats) {
      const k = counterKeys(op.userId, ctx.prefix);
      if (!isCluster(conn)) return transaction(conn, k, op, hooks, stats, ctx.watch.maxRetries);
      const node = masterConnection(conn, k.meta);
      try {
        if (!node) throw new Error(`no connection to the master of user ${op.userId}'s slot yet`);
        await transaction(node, k, op, hooks, stats, ctx.watch.maxRetries);
      } catch (err) {
        if (!node || isRedirection(err)) conn.refreshSlotsCache();
        throw err;
      }
    },
    read: (conn, userIds) => readCounters(conn, (id) => counterKeys(id, ctx.prefix), userIds),
  };
}

/** WATCH, reads, MULTI and EXEC of one operation, all on `conn`, retried while EXEC answers nil. */
async function transaction(
  conn: Redis,
  k: ReturnType<typeof counterKeys>,
  op: LabOp,
  hooks: OpHooks,
  stats: OpStats,
  maxRetries: number,
): Promise<void> {
  const conv = String(op.conversationId);
  for (let attempt = 0; attempt <= maxRetries; attempt++) {
    const epoch = connectionEpoch(conn);
    await conn.watch(k.unread, k.meta, k.state);
    const [unreadRaw, totalRaw, stateRaw] = await Promise.all([
      conn.hget(k.unread, conv),
      conn.hget(k.meta, "total"),
      conn.hget(k.state, conv),
    ]);
    const unread = Number(unreadRaw ?? 0);
    const total = Number(totalRaw ?? 0);
    const muted = stateRaw === MUTED;
    await hooks.trace?.(
      `WATCH unread meta state; HGET unread ${conv} → ${unread}; HGET meta total → ${total}` +
        (muted ? `; HGET state ${conv} → ${MUTED}` : ""),
    );
    try {
      await hooks.gap();
    } catch (err) {
      await conn.unwatch().catch(() => undefined);
      throw err;
    }
    // A reconnect since WATCH dropped it silently: EXEC on the new connection would not be protected.
    if (connectionEpoch(conn) !== epoch) throw new Error("the connection was lost under WATCH");
    // A muted conversation's count is not in the total: a send or read of it leaves the total alone, and a
    // mute takes the count out of it.
    const next =
      op.kind === "send"
        ? { unread: unread + 1, total: muted ? total : total + 1 }
        : op.kind === "read"
          ? { unread: 0, total: muted ? total : Math.max(0, total - unread) }
          : { unread, total: muted ? total : Math.max(0, total - unread) };
    const tx = conn.multi();
    if (op.kind === "mute") tx.hset(k.state, conv, MUTED);
    if (next.unread > 0) tx.hset(k.unread, conv, next.unread);
    else tx.hdel(k.unread, conv);
    tx.hset(k.meta, "total", next.total);
    const result = await tx.exec();
    if (result !== null) {
      const failed = result.find(([err]) => err);
      if (failed) throw failed[0];
      const unreadWrite = next.unread > 0 ? `HSET unread ${conv} ${next.unread}` : `HDEL unread ${conv}`;
      const stateWrite = op.kind === "mute" ? `HSET state ${conv} ${MUTED}; ` : "";
      await hooks.trace?.(`MULTI; ${stateWrite}${unreadWrite}; HSET meta total ${next.total}; EXEC → OK`);
      return;
    }
    stats.retries++;
    await hooks.trace?.("EXEC → nil: a watched key changed, start over");
  }
  throw new GaveUp(`WATCH on user ${op.userId} conflicted ${maxRetries + 1} times`);
}
