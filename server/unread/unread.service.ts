import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { UnreadUpdate } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { unreadScriptKeys } from "../redis/keys.ts";
import type { ApplyReply, InspectReply, RebuildReply } from "../redis/scripts.ts";

/** One event for one user: a message seq seen and/or a read cursor, in one conversation. */
export interface UnreadEvent {
  userId: number;
  conversationId: number;
  seenSeq: number;
  readSeq: number;
  /** When message `seenSeq` was created (ms), so it can expire; omitted when the event carries no message. */
  createdAtMs?: number;
}

/** The database's truth for one membership. */
export interface MembershipTruth {
  conversationId: number;
  lastSeq: number;
  lastReadSeq: number;
  /** With unread expiry: the highest seq above the cursor created before now - TTL (0: none, or expiry off). */
  agedSeq: number;
}

export interface AppliedEvent {
  userId: number;
  update: UnreadUpdate;
  /** The user's unread state changed: push `update` to their room. */
  changed: boolean;
}

export interface UnreadCounts {
  epoch: string;
  version: number;
  totalUnread: number;
  /** Conversations with unread > 0. */
  counts: Map<number, number>;
}

export interface UnreadServiceDeps {
  redis: Redis;
  db: Db;
  /** Key prefix (tests and the lab use their own key space). */
  prefix?: string;
  /** Unread messages older than this stop counting (UNREAD_TTL_DAYS); 0 or unset: never. */
  ttlMs?: number;
  /**
   * Tests only: the instant (ms) expiry is judged at, passed to the scripts as their "now". Unset in production,
   * where the scripts read Redis' TIME, so every instance judges by the same clock.
   */
  clock?: () => number;
  /**
   * Expiry at read time (a snapshot or an inspection) started a new epoch: the user's open tabs should resync.
   * An apply needs no call: its push carries the new epoch.
   */
  onResync?: (userId: number) => void;
}

/** Epochs only need to differ from every earlier epoch of the same user. */
export function newEpoch(): string {
  return `${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
}

function toUpdate(conversationId: number, reply: ApplyReply): { update: UnreadUpdate; changed: boolean } | null {
  if (reply.length === 1) return null;
  const [unreadCount, totalUnread, version, epoch, changed] = reply;
  return { update: { conversationId, unreadCount, totalUnread, version, epoch }, changed: changed === 1 };
}

export type UnreadService = ReturnType<typeof createUnreadService>;

/**
 * The only code that changes unread counters: each change is one Lua script call per (user, event), so a
 * conversation's unread, the total and the version always move together. Missing state is rebuilt from the
 * database, which is always written before Redis.
 */
export function createUnreadService({ redis, db, prefix = "", ttlMs = 0, clock, onResync }: UnreadServiceDeps) {
  async function memberships(userId: number): Promise<Omit<MembershipTruth, "agedSeq">[]> {
    const rows = await db.membership.findMany({
      where: { userId },
      select: { conversationId: true, lastReadSeq: true, conversation: { select: { lastSeq: true } } },
    });
    return rows.map((r) => ({
      conversationId: r.conversationId,
      lastSeq: r.conversation.lastSeq,
      lastReadSeq: r.lastReadSeq,
    }));
  }

  /** The user's unread messages (above their cursor, within the memberships read before), oldest seq first. */
  async function unreadMessages(userId: number, bounds: Omit<MembershipTruth, "agedSeq">[]) {
    const rows = await db.$queryRaw<{ conversationId: number; seq: number; createdAt: Date }[]>`
      SELECT m."conversationId", m."seq", m."createdAt" FROM "Message" m
      JOIN "Membership" mb ON mb."conversationId" = m."conversationId" AND mb."userId" = ${userId}
      WHERE m."seq" > mb."lastReadSeq" ORDER BY m."conversationId", m."seq"`;
    const byConversation = new Map(bounds.map((b) => [b.conversationId, b]));
    return rows
      .filter((r) => {
        const b = byConversation.get(r.conversationId);
        return b !== undefined && r.seq > b.lastReadSeq && r.seq <= b.lastSeq;
      })
      .map((r) => ({ conversationId: r.conversationId, seq: r.seq, createdAtMs: r.createdAt.getTime() }));
  }

  /** The scripts' clock (the injected one, else Redis' TIME): the database's truth is computed for its instant. */
  async function expiryNowMs(): Promise<number> {
    if (clock) return clock();
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /**
   * The database's truth for one user: every membership's conversation lastSeq and read cursor and, with unread
   * expiry, the highest unread seq that expired by `nowMs` (the scripts' clock, read when omitted).
   */
  async function truth(userId: number, nowMs?: number): Promise<MembershipTruth[]> {
    const rows = await memberships(userId);
    if (ttlMs <= 0) return rows.map((r) => ({ ...r, agedSeq: 0 }));
    const cutoff = (nowMs ?? (await expiryNowMs())) - ttlMs;
    const aged = new Map<number, number>();
    for (const m of await unreadMessages(userId, rows))
      if (m.createdAtMs < cutoff) aged.set(m.conversationId, Math.max(aged.get(m.conversationId) ?? 0, m.seq));
    return rows.map((r) => ({ ...r, agedSeq: aged.get(r.conversationId) ?? 0 }));
  }

  async function rebuild(userId: number, mode: "merge" | "replace" = "merge"): Promise<RebuildReply> {
    return (await rebuildWithMembers(userId, mode)).reply;
  }

  /** rebuild(), also saying which conversations the user was found in. */
  async function rebuildWithMembers(
    userId: number,
    mode: "merge" | "replace",
  ): Promise<{ reply: RebuildReply; conversationIds: Set<number> }> {
    const rows = await memberships(userId);
    const args: (number | string)[] = rows.flatMap((t) => [t.conversationId, t.lastSeq, t.lastReadSeq]);
    if (ttlMs > 0) {
      // Every unread message with its createdAt, except that of those already expired the highest seq per
      // conversation says as much as all of them (aged is a max-register): the rebuild stays bounded by the
      // messages still inside the TTL.
      const nowMs = await expiryNowMs();
      const cutoff = nowMs - ttlMs;
      const expired = new Map<number, [number, number]>();
      const live: number[] = [];
      for (const m of await unreadMessages(userId, rows)) {
        if (m.createdAtMs < cutoff) expired.set(m.conversationId, [m.seq, m.createdAtMs]);
        else live.push(m.conversationId, m.seq, m.createdAtMs);
      }
      args.push("ttl", ttlMs, ...(clock ? ["now", nowMs] : []));
      args.push(...[...expired].flatMap(([conversationId, [seq, at]]) => [conversationId, seq, at]));
      args.push(...live);
    }
    const reply = await redis.tallyRebuild(...unreadScriptKeys(userId, prefix), newEpoch(), mode, ...args);
    return { reply, conversationIds: new Set(rows.map((r) => r.conversationId)) };
  }

  function applyArgs(e: UnreadEvent): Parameters<Redis["tallyApply"]> {
    const args = [...unreadScriptKeys(e.userId, prefix), e.conversationId, e.seenSeq, e.readSeq] as const;
    return clock ? [...args, e.createdAtMs ?? 0, ttlMs, clock()] : [...args, e.createdAtMs ?? 0, ttlMs];
  }

  async function applyOne(event: UnreadEvent): Promise<AppliedEvent> {
    const { userId, conversationId } = event;
    let result = toUpdate(conversationId, await redis.tallyApply(...applyArgs(event)));
    if (result) return { userId, ...result };
    // State was missing: the rebuild reads the database, which already holds this event. The event may be late,
    // for a conversation the user has left since (a fan-out computed before they left); the "gone" mark that
    // would have ignored it went with the rest of the state, so it is set again instead of applying the event.
    const rebuilt = await rebuildWithMembers(userId, "merge");
    result = toUpdate(
      conversationId,
      rebuilt.conversationIds.has(conversationId)
        ? await redis.tallyApply(...applyArgs(event))
        : await redis.tallyRemove(...unreadScriptKeys(userId, prefix), conversationId),
    );
    if (!result) throw new Error(`unread state of user ${userId} vanished right after its rebuild`);
    return { userId, update: result.update, changed: result.changed || rebuilt.reply[3] !== "unchanged" };
  }

  /** Applies many events in one pipeline (a message fans out to every member). */
  async function applyMany(events: UnreadEvent[]): Promise<AppliedEvent[]> {
    if (events.length === 0) return [];
    if (events.length === 1) return [await applyOne(events[0]!)];
    const pipeline = redis.pipeline();
    for (const e of events) pipeline.tallyApply(...applyArgs(e));
    const replies = (await pipeline.exec()) ?? [];
    return Promise.all(
      events.map(async (event, i) => {
        const [err, reply] = replies[i] ?? [new Error("missing pipeline reply"), null];
        const result = err ? null : toUpdate(event.conversationId, reply as ApplyReply);
        return result ? { userId: event.userId, ...result } : applyOne(event);
      }),
    );
  }

  async function snapshot(userId: number): Promise<UnreadCounts> {
    const keys = unreadScriptKeys(userId, prefix);
    const read = () =>
      clock ? redis.tallySnapshotExpiring(...keys, ttlMs, clock()) : redis.tallySnapshotExpiring(...keys, ttlMs);
    let reply = await read();
    if (reply.length === 1) {
      // Missing (-1) or a stored total that drifted from the sum (-2): both are fixed from the database.
      await rebuild(userId);
      reply = await read();
    }
    if (reply.length === 1) throw new Error(`unread state of user ${userId} could not be rebuilt (${reply[0]})`);
    const [epoch, version, totalUnread, expired, ...flat] = reply as [string, number, number, 0 | 1, ...string[]];
    if (expired === 1) onResync?.(userId);
    const counts = new Map<number, number>();
    for (let i = 0; i + 1 < flat.length; i += 2) counts.set(Number(flat[i]), Number(flat[i + 1]));
    return { epoch, version, totalUnread, counts };
  }

  /** Takes a conversation out of a user's counters (they left it, or it was deleted). */
  async function remove(userId: number, conversationId: number): Promise<AppliedEvent | null> {
    const result = toUpdate(
      conversationId,
      await redis.tallyRemove(...unreadScriptKeys(userId, prefix), conversationId),
    );
    // Missing state needs nothing: the next rebuild reads memberships, which no longer list the conversation.
    return result ? { userId, ...result } : null;
  }

  /** Everything Redis holds for the user, after expiring what the TTL says (reconciliation). */
  async function inspect(userId: number): Promise<InspectReply> {
    const keys = unreadScriptKeys(userId, prefix);
    const reply = await (clock ? redis.tallyInspect(...keys, ttlMs, clock()) : redis.tallyInspect(...keys, ttlMs));
    if (reply.length > 1 && reply[7] === 1) onResync?.(userId);
    return reply;
  }

  return { applyOne, applyMany, snapshot, rebuild, remove, truth, inspect, ttlMs };
}
