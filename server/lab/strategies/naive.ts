import type { Redis } from "ioredis";
import { userKeys } from "../../redis/keys.ts";
import type { LabOp } from "../workload.ts";
import { readCounters, type OpHooks, type Strategy, type StrategyContext } from "./types.ts";

/**
 * The two writes of a counter update as most chat servers first write them. Exported for the lock strategy,
 * which runs exactly these steps while it holds the user's lock.
 *
 * send: HINCRBY the conversation, then (a separate command) HINCRBY the total.
 * read: HGET + HDEL the conversation (clear it), then HINCRBY the total by minus what was cleared, clamped at
 * zero as badge code usually is (a badge never shows -1). Without the clamp the increments would commute and
 * a read racing a send would heal itself; with it, the race leaves "badge 1, list 0" behind.
 */
export async function counterSteps(conn: Redis, prefix: string, op: LabOp, hooks: OpHooks): Promise<void> {
  const k = userKeys(op.userId, prefix);
  const conv = String(op.conversationId);
  if (op.kind === "send") {
    const unread = await conn.hincrby(k.unread, conv, 1);
    await hooks.trace?.(`HINCRBY unread ${conv} 1 → ${unread}`);
    await hooks.gap();
    const total = await conn.hincrby(k.meta, "total", 1);
    await hooks.trace?.(`HINCRBY meta total 1 → ${total}`);
    return;
  }
  const cleared = Number((await conn.hget(k.unread, conv)) ?? 0);
  await conn.hdel(k.unread, conv);
  await hooks.trace?.(`HGET unread ${conv} → ${cleared}; HDEL unread ${conv}`);
  await hooks.gap();
  const total = await conn.hincrby(k.meta, "total", -cleared);
  if (total < 0) {
    await conn.hset(k.meta, "total", 0);
    await hooks.trace?.(`HINCRBY meta total -${cleared} → ${total}; clamped: HSET meta total 0`);
  } else {
    await hooks.trace?.(`HINCRBY meta total -${cleared} → ${total}`);
  }
}

export function naiveStrategy(ctx: StrategyContext): Strategy {
  return {
    name: "naive",
    prepare: async () => undefined,
    apply: (conn, op, hooks) => counterSteps(conn, ctx.prefix, op, hooks),
    read: (conn, userIds) => readCounters(conn, (id) => userKeys(id, ctx.prefix), userIds),
  };
}
