import { userKeys } from "../../redis/keys.ts";
import { connectionEpoch } from "../scripts.ts";
import { GaveUp, readCounters, type Strategy, type StrategyContext } from "./types.ts";

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
        await conn.watch(k.unread, k.meta);
        const [unreadRaw, totalRaw] = await Promise.all([conn.hget(k.unread, conv), conn.hget(k.meta, "total")]);
        const unread = Number(unreadRaw ?? 0);
        const total = Number(totalRaw ?? 0);
        await hooks.trace?.(`WATCH unread meta; HGET unread ${conv} → ${unread}; HGET meta total → ${total}`);
        try {
          await hooks.gap();
        } catch (err) {
          await conn.unwatch().catch(() => undefined);
          throw err;
        }
        // A reconnect since WATCH dropped it silently: EXEC on the new connection would not be protected.
        if (connectionEpoch(conn) !== epoch) throw new Error("the connection was lost under WATCH");
        const tx = conn.multi();
        if (op.kind === "send") tx.hset(k.unread, conv, unread + 1).hset(k.meta, "total", total + 1);
        else tx.hdel(k.unread, conv).hset(k.meta, "total", Math.max(0, total - unread));
        const result = await tx.exec();
        if (result !== null) {
          const failed = result.find(([err]) => err);
          if (failed) throw failed[0];
          await hooks.trace?.(
            op.kind === "send"
              ? `MULTI; HSET unread ${conv} ${unread + 1}; HSET meta total ${total + 1}; EXEC → OK`
              : `MULTI; HDEL unread ${conv}; HSET meta total ${Math.max(0, total - unread)}; EXEC → OK`,
          );
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
