import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { UnreadUpdate } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { unreadScriptKeys } from "../redis/keys.ts";
import type { ApplyReply, RebuildReply } from "../redis/scripts.ts";

/** One event for one user: a message seq seen and/or a read cursor, in one conversation. */
export interface UnreadEvent {
  userId: number;
  conversationId: number;
  seenSeq: number;
  readSeq: number;
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
export function createUnreadService({ redis, db, prefix = "" }: UnreadServiceDeps) {
  async function rebuild(userId: number): Promise<RebuildReply> {
    const rows = await db.membership.findMany({
      where: { userId },
      select: { conversationId: true, lastReadSeq: true, conversation: { select: { lastSeq: true } } },
    });
    const triples = rows.flatMap((r) => [r.conversationId, r.conversation.lastSeq, r.lastReadSeq]);
    return redis.tallyRebuild(...unreadScriptKeys(userId, prefix), newEpoch(), ...triples);
  }

  async function applyOne(event: UnreadEvent): Promise<AppliedEvent> {
    const { userId, conversationId, seenSeq, readSeq } = event;
    const keys = unreadScriptKeys(userId, prefix);
    let result = toUpdate(conversationId, await redis.tallyApply(...keys, conversationId, seenSeq, readSeq));
    if (result) return { userId, ...result };
    // State was missing: the rebuild reads the database, which already holds this event.
    const rebuilt = await rebuild(userId);
    result = toUpdate(conversationId, await redis.tallyApply(...keys, conversationId, seenSeq, readSeq));
    if (!result) throw new Error(`unread state of user ${userId} vanished right after its rebuild`);
    return { userId, update: result.update, changed: result.changed || rebuilt[3] !== "unchanged" };
  }

  /** Applies many events in one pipeline (a message fans out to every member). */
  async function applyMany(events: UnreadEvent[]): Promise<AppliedEvent[]> {
    if (events.length === 0) return [];
    if (events.length === 1) return [await applyOne(events[0]!)];
    const pipeline = redis.pipeline();
    for (const e of events)
      pipeline.tallyApply(...unreadScriptKeys(e.userId, prefix), e.conversationId, e.seenSeq, e.readSeq);
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
    let reply = await redis.tallySnapshot(keys[0], keys[1]);
    if (reply.length === 1) {
      await rebuild(userId);
      reply = await redis.tallySnapshot(keys[0], keys[1]);
    }
    if (reply.length === 1) throw new Error(`unread state of user ${userId} vanished right after its rebuild`);
    const [epoch, version, totalUnread, ...flat] = reply as [string, number, number, ...string[]];
    const counts = new Map<number, number>();
    for (let i = 0; i + 1 < flat.length; i += 2) counts.set(Number(flat[i]), Number(flat[i + 1]));
    return { epoch, version, totalUnread, counts };
  }

  return { applyOne, applyMany, snapshot, rebuild };
}
