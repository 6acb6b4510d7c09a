import { userKeys } from "../../redis/keys.ts";
import { connectionEpoch } from "../scripts.ts";
import { GaveUp, MUTED, readCounters, type Strategy, type StrategyContext } from "./types.ts";

/**
 * Optimistic transactions: WATCH the user's keys, read the counters, write the new values with MULTI/EXEC.
 * EXEC answers nil when another client wrote a watched key in between; the operation then starts over, up to
 * `maxRetries` times. Both writes land together or not at all.
 */
export function watchStrategy(ctx: StrategyContext): Strategy {
  return {
    name: "watch",
    prepare: async () => undefined,
    async apply(conn, op, hooks, stats) {
      const k = userKeys(op.userId, ctx.prefix);
      const conv = String(op.conversationId);
      for (let attempt = 0; attempt <= ctx.watch.maxRetries; attempt++) {
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
      throw new GaveUp(`WATCH on user ${op.userId} conflicted ${ctx.watch.maxRetries + 1} times`);
    },
    read: (conn, userIds) => readCounters(conn, (id) => userKeys(id, ctx.prefix), userIds),
  };
}
