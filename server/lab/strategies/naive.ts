import type { RedisClient } from "../../redis/client.ts";
import { counterKeys } from "../../redis/keys.ts";
import type { LabOp } from "../workload.ts";
import { MUTED, readCounters, type OpHooks, type Strategy, type StrategyContext } from "./types.ts";

/**
 * The two writes of a counter update as most chat servers first write them. Exported for the lock strategy,
 * which runs exactly these steps while it holds the user's lock. A muted conversation keeps its count but stays
 * out of the total, so the first step also looks up whether it is muted (HGET state), and the second step
 * follows what it saw.
 *
 * send: HINCRBY the conversation, then (a separate command) HINCRBY the total unless the conversation was muted.
 * read: HGET + HDEL the conversation (clear it), then HINCRBY the total by minus what was cleared, clamped at
 * zero as badge code usually is (a badge never shows -1). Without the clamp the increments would commute and
 * a read racing a send would heal itself; with it, the race leaves "badge 1, list 0" behind.
 * mute: HSET state muted and HGET the conversation's count, then take that count out of the total (clamped).
 */
export async function counterSteps(conn: RedisClient, prefix: string, op: LabOp, hooks: OpHooks): Promise<void> {
  const k = counterKeys(op.userId, prefix);
  const conv = String(op.conversationId);
  if (op.kind === "send") {
    const [unread, state] = await exec(conn.pipeline().hincrby(k.unread, conv, 1).hget(k.state, conv));
    const muted = state === MUTED;
    await hooks.trace?.(`HINCRBY unread ${conv} 1 → ${String(unread)}; HGET state ${conv} → ${muted ? MUTED : "nil"}`);
    await hooks.gap();
    if (muted) return hooks.trace?.("muted: the total is left alone");
    const total = await conn.hincrby(k.meta, "total", 1);
    await hooks.trace?.(`HINCRBY meta total 1 → ${total}`);
    return;
  }
  if (op.kind === "mute") {
    const [, count] = await exec(conn.pipeline().hset(k.state, conv, MUTED).hget(k.unread, conv));
    const cleared = Number(count ?? 0);
    await hooks.trace?.(`HSET state ${conv} ${MUTED}; HGET unread ${conv} → ${cleared}`);
    await hooks.gap();
    return lowerTotal(conn, k.meta, cleared, hooks);
  }
  // HGET, then HDEL as a separate command: a send landing between them is deleted without being counted out.
  const [count, state] = await exec(conn.pipeline().hget(k.unread, conv).hget(k.state, conv));
  await conn.hdel(k.unread, conv);
  const cleared = Number(count ?? 0);
  const muted = state === MUTED;
  await hooks.trace?.(
    `HGET unread ${conv} → ${cleared}; HDEL unread ${conv}${muted ? `; HGET state ${conv} → ${MUTED}` : ""}`,
  );
  await hooks.gap();
  if (muted) return hooks.trace?.("muted: the total never counted it");
  return lowerTotal(conn, k.meta, cleared, hooks);
}

/** The second step of a read or a mute: the total minus what left it, clamped at zero. */
async function lowerTotal(conn: RedisClient, meta: string, by: number, hooks: OpHooks): Promise<void> {
  const total = await conn.hincrby(meta, "total", -by);
  if (total < 0) {
    await conn.hset(meta, "total", 0);
    await hooks.trace?.(`HINCRBY meta total -${by} → ${total}; clamped: HSET meta total 0`);
  } else {
    await hooks.trace?.(`HINCRBY meta total -${by} → ${total}`);
  }
}

/** A pipeline's replies, throwing the first error (the commands still ran one by one, not atomically). */
async function exec(pipeline: ReturnType<RedisClient["pipeline"]>): Promise<unknown[]> {
  const replies = (await pipeline.exec()) ?? [];
  for (const [err] of replies) if (err) throw err;
  return replies.map(([, value]) => value);
}

export function naiveStrategy(ctx: StrategyContext): Strategy {
  return {
    name: "naive",
    prepare: async () => undefined,
    apply: (conn, op, hooks) => counterSteps(conn, ctx.prefix, op, hooks),
    read: (conn, userIds) => readCounters(conn, (id) => counterKeys(id, ctx.prefix), userIds),
  };
}
