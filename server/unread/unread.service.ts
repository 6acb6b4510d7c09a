import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import pLimit from "p-limit";
import type { UnreadState, UnreadUpdate } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { groupByNode, type RedisClient } from "../redis/client.ts";
import { rebuildScriptKeys, unreadScriptKeys, userKeys } from "../redis/keys.ts";
import {
  readOfReply,
  updateOf,
  type ApplyPart,
  type ApplyReply,
  type InspectReply,
  type RebuildReply,
  type UnreadCounts,
} from "../redis/scripts.ts";
import { readPlainSnapshot } from "../redis/snapshot.ts";

/** A membership's mute and mark registers, as the database holds them (docs/consistency.md). */
export interface MembershipRegisters {
  muteVersion: number;
  muted: boolean;
  markVersion: number;
  markAt: number;
  markClearedVersion: number;
}

/** The membership's registers, as `db.membership` selects them. */
export const registersSelect = {
  muteVersion: true,
  muted: true,
  markVersion: true,
  markAt: true,
  markClearedVersion: true,
} as const satisfies Record<keyof MembershipRegisters, true>;

/**
 * One event for one user in one conversation: a message seq seen and/or a read cursor, and optionally that the
 * message mentions the user, or the membership's mute and mark registers (all merged, never overwritten).
 */
export interface UnreadEvent {
  userId: number;
  conversationId: number;
  seenSeq: number;
  readSeq: number;
  /** When message `seenSeq` was created (ms), so it can expire; omitted when the event carries no message. */
  createdAtMs?: number;
  /** Message `seenSeq` mentions the user. */
  mention?: boolean;
  /** The user sent message `seenSeq`: it never counts for them (apply.lua's `own`). */
  own?: boolean;
  /** Its sender deleted message `seenSeq` (someone else's): it never counts, nor does its mention (`deleted`). */
  deleted?: boolean;
  /** The membership's registers (a mute, a mark, a read that cleared a mark, or a replay of any). */
  registers?: Partial<MembershipRegisters>;
}

/** The database's truth for one membership. */
export interface MembershipTruth extends MembershipRegisters {
  conversationId: number;
  lastSeq: number;
  lastReadSeq: number;
  /** With unread expiry: the highest seq above the cursor created before now - TTL (0: none, or expiry off). */
  agedSeq: number;
  /** Seqs above the cursor of the messages that mention the user. */
  mentionSeqs: number[];
  /** Seqs above the cursor of the user's own messages: they never count. */
  ownSeqs: number[];
  /** Seqs above the cursor of others' messages their senders deleted: they never count either. */
  deletedSeqs: number[];
}

/** A membership as the database stores it, before the seqs above its cursor are read with it. */
type MembershipRow = Omit<MembershipTruth, "agedSeq" | "mentionSeqs" | "ownSeqs" | "deletedSeqs">;

export interface AppliedEvent {
  userId: number;
  update: UnreadUpdate;
  /** The user's unread state changed: push `update` to their room. */
  changed: boolean;
}

export type { UnreadCounts };

/** A conversation with nothing to show. */
export const NO_UNREAD: UnreadState = {
  unreadCount: 0,
  mentionCount: 0,
  muted: false,
  markedUnread: false,
  markVersion: 0,
};

export interface UnreadServiceDeps {
  redis: RedisClient;
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
   * Expiry at read time (a snapshot, an inspection or a view), or a snapshot's repair of drifted sums, started a new
   * epoch, or a view changed the user's state without a push: the user's open tabs should resync. An apply needs
   * no call: its push carries the new epoch.
   */
  onResync?: (userId: number) => void;
  /** How many rebuilds may read the database at once (REBUILD_CONCURRENCY unless set). */
  rebuildConcurrency?: number;
  /**
   * Each rebuild as it reads the database ("read"), and each caller that found a user's state missing and took the
   * rebuild already under way for it instead ("joined"): the metrics.
   */
  onRebuild?: (how: "read" | "joined") => void;
}

/**
 * How many of a service's rebuilds read the database at once (an app process has one service); the others wait for
 * a turn. A burst of rebuilds, such as the first message to a group of 1000 after Redis lost its keys, would
 * otherwise ask for as many transactions at once on a pool of 10 connections (db/prisma.ts): those left waiting for
 * a connection longer than Prisma's `maxWait` (2 s) failed with P2028 (seen on a slow host in the bench's fan-out
 * part), and the rest took every connection the sends need meanwhile. Only the reads take a turn: the ticket before
 * them and rebuild.lua after them are Redis calls, so a Redis node that is slow to answer holds only its own users'
 * rebuilds. Four is well under the pool's ten; nothing reserves the rest, so change the two together.
 */
export const REBUILD_CONCURRENCY = 4;

/**
 * How long a departure keeps marking its conversation "gone" in rebuilds. A late event is one computed before
 * the departure and still in flight (a fan-out's Redis call waiting through an outage); replays read the
 * memberships afresh, so a day is far beyond any. Reconciliation deletes older departures.
 */
export const DEPARTURE_MEMORY_MS = 24 * 60 * 60 * 1000;

/** applyMany sends fewer events than this as calls of their own, more in a pipeline (docs/benchmarks.md). */
const PIPELINE_FROM = 16;

/** Epochs only need to differ from every earlier epoch of the same user. */
export function newEpoch(): string {
  return `${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
}

/** apply.lua's named parts for an event's mention and registers. */
function applyParts(e: UnreadEvent): ApplyPart[] {
  const parts: ApplyPart[] = e.mention ? ["mention"] : e.own ? ["own"] : e.deleted ? ["deleted"] : [];
  const r = e.registers;
  if (r?.muteVersion !== undefined && r.muted !== undefined) parts.push("mute", r.muteVersion, r.muted ? 1 : 0);
  if (r?.markVersion !== undefined && r.markAt !== undefined) parts.push("mark", r.markVersion, r.markAt);
  if (r?.markClearedVersion !== undefined) parts.push("clear", r.markClearedVersion);
  return parts;
}

/**
 * A cursor moved over the own messages right above it, as the scripts keep it (includes/unread.lua), and the own
 * seqs left above it, up to lastSeq. The database keeps its cursors so too, but a read that raced a send may leave
 * one right below an own message (docs/consistency.md, "Own messages"): the truth is the cursor moved on.
 */
export function overOwn(cursor: number, own: readonly number[], lastSeq: number) {
  let lastReadSeq = cursor;
  const sorted = [...own].sort((a, b) => a - b);
  for (const seq of sorted) if (seq === lastReadSeq + 1 && seq <= lastSeq) lastReadSeq = seq;
  return { lastReadSeq, ownSeqs: sorted.filter((seq) => seq > lastReadSeq && seq <= lastSeq) };
}

/** The registers as rebuild.lua takes them, after lastSeq and lastReadSeq. */
function registerArgs(r: MembershipRegisters): number[] {
  return [r.muteVersion, r.muted ? 1 : 0, r.markVersion, r.markAt, r.markClearedVersion];
}

export type UnreadService = ReturnType<typeof createUnreadService>;

/**
 * The only code that changes unread counters: each change is one Lua script call per (user, event), so a
 * conversation's unread, the total and the version always move together. Missing state is rebuilt from the
 * database, which is always written before Redis.
 */
export function createUnreadService({
  redis,
  db,
  prefix = "",
  ttlMs = 0,
  clock,
  onResync,
  rebuildConcurrency = REBUILD_CONCURRENCY,
  onRebuild,
}: UnreadServiceDeps) {
  /** A rebuild's turn to read the database (REBUILD_CONCURRENCY). */
  const rebuildTurn = pLimit(rebuildConcurrency);
  /** Rebuilds of state found missing that have not yet sent their write, by user: what a caller may join. */
  const joinable = new Map<number, Promise<RebuildReply>>();

  /**
   * The user's memberships (each with its conversation's lastSeq) and the seqs above each cursor of the messages
   * that mention them and of their own messages, in one snapshot: one REPEATABLE READ transaction. Two reads at two
   * instants (they were run side by side) could see a message in lastSeq but not its mention, had it committed
   * between them, and a rebuild would then count the message and never the mention (or count an own message).
   */
  async function membershipsAndMentions(userId: number): Promise<{
    rows: MembershipRow[];
    mentions: Map<number, number[]>;
    own: Map<number, number[]>;
    deleted: Map<number, number[]>;
  }> {
    const [memberships, mentionRows, ownRows, deletedRows] = await db.$transaction(
      [
        db.membership.findMany({
          where: { userId },
          select: {
            conversationId: true,
            lastReadSeq: true,
            ...registersSelect,
            conversation: { select: { lastSeq: true } },
          },
        }),
        db.$queryRaw<{ conversationId: number; seq: number }[]>`
          SELECT mn."conversationId", mn."seq" FROM "Mention" mn
          JOIN "Membership" mb ON mb."conversationId" = mn."conversationId" AND mb."userId" = mn."userId"
          WHERE mn."userId" = ${userId} AND mn."seq" > mb."lastReadSeq" ORDER BY mn."conversationId", mn."seq"`,
        // Message_senderId_conversationId_seq_idx: a range per membership, however much the user ever sent.
        db.$queryRaw<{ conversationId: number; seq: number }[]>`
          SELECT m."conversationId", m."seq" FROM "Membership" mb
          JOIN "Message" m ON m."senderId" = mb."userId" AND m."conversationId" = mb."conversationId"
            AND m."seq" > mb."lastReadSeq"
          WHERE mb."userId" = ${userId} ORDER BY m."conversationId", m."seq"`,
        // Others' messages above the cursor their senders deleted (Message_deleted_conversationId_seq_idx holds
        // deleted rows only): they never count (docs/consistency.md, "7. Deleting a message").
        db.$queryRaw<{ conversationId: number; seq: number }[]>`
          SELECT m."conversationId", m."seq" FROM "Membership" mb
          JOIN "Message" m ON m."conversationId" = mb."conversationId" AND m."seq" > mb."lastReadSeq"
            AND m."deletedAt" IS NOT NULL AND m."senderId" <> mb."userId"
          WHERE mb."userId" = ${userId} ORDER BY m."conversationId", m."seq"`,
      ],
      // maxWait: as long as the pool's own wait for a connection (db/prisma.ts), not Prisma's 2 s: a busy pool (a
      // burst of syncs) delays a rebuild rather than failing it and leaving its fan-out to the relay.
      { isolationLevel: "RepeatableRead", maxWait: 10_000 },
    );
    // In place: a user can be mentioned tens of thousands of times (docs/security.md, "Mention floods").
    const bySeq = (rows: { conversationId: number; seq: number }[]) => {
      const out = new Map<number, number[]>();
      for (const r of rows) {
        const seqs = out.get(r.conversationId);
        if (seqs) seqs.push(r.seq);
        else out.set(r.conversationId, [r.seq]);
      }
      return out;
    };
    return {
      rows: memberships.map(({ conversation, ...r }) => ({ ...r, lastSeq: conversation.lastSeq })),
      mentions: bySeq(mentionRows),
      own: bySeq(ownRows),
      deleted: bySeq(deletedRows),
    };
  }

  /**
   * The user's unread messages (above their cursor, within the memberships read before, not their own), oldest seq
   * first.
   */
  async function unreadMessages(userId: number, bounds: MembershipRow[]) {
    const rows = await db.$queryRaw<{ conversationId: number; seq: number; createdAt: Date }[]>`
      SELECT m."conversationId", m."seq", m."createdAt" FROM "Message" m
      JOIN "Membership" mb ON mb."conversationId" = m."conversationId" AND mb."userId" = ${userId}
      WHERE m."seq" > mb."lastReadSeq" AND m."senderId" <> ${userId} ORDER BY m."conversationId", m."seq"`;
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
    const { rows, mentions, own, deleted } = await membershipsAndMentions(userId);
    const withMentions = rows.map((r) => {
      const { lastReadSeq, ownSeqs } = overOwn(r.lastReadSeq, own.get(r.conversationId) ?? [], r.lastSeq);
      const within = (seqs: number[] | undefined) => (seqs ?? []).filter((s) => s > lastReadSeq && s <= r.lastSeq);
      return {
        ...r,
        lastReadSeq,
        mentionSeqs: within(mentions.get(r.conversationId)),
        ownSeqs,
        deletedSeqs: within(deleted.get(r.conversationId)),
      };
    });
    if (ttlMs <= 0) return withMentions.map((r) => ({ ...r, agedSeq: 0 }));
    const cutoff = (nowMs ?? (await expiryNowMs())) - ttlMs;
    const aged = new Map<number, number>();
    for (const m of await unreadMessages(userId, rows))
      if (m.createdAtMs < cutoff) aged.set(m.conversationId, Math.max(aged.get(m.conversationId) ?? 0, m.seq));
    return withMentions.map((r) => ({ ...r, agedSeq: aged.get(r.conversationId) ?? 0 }));
  }

  /** Conversations the user left (or lost to a deletion) recently enough for a late event to still come. */
  async function departures(userId: number): Promise<number[]> {
    const rows = await db.departure.findMany({
      where: { userId, at: { gte: new Date(Date.now() - DEPARTURE_MEMORY_MS) } },
      select: { conversationId: true },
    });
    return rows.map((r) => r.conversationId);
  }

  /**
   * Rebuilds the user's state from the database (rebuild.lua). State fenced by a failover is replaced only from a
   * database read made after seeing it fenced: the first answer names the term, the database is read again. So is
   * state that Redis lost after the read began (the ticket taken before it is gone with it). Every call reads the
   * database afresh (reconciliation's merge after a replace needs a read made after its own write).
   */
  function rebuild(userId: number, mode: "merge" | "replace" = "merge"): Promise<RebuildReply> {
    return rebuildFrom(userId, mode);
  }

  /** `rebuild`, calling `beforeWrite` just before its first rebuild.lua goes out. */
  async function rebuildFrom(
    userId: number,
    mode: "merge" | "replace",
    beforeWrite?: () => void,
  ): Promise<RebuildReply> {
    let reply = await rebuildOnce(userId, mode, undefined, beforeWrite);
    for (let attempt = 0; reply[3] === "fenced"; attempt++) {
      if (attempt === 2)
        throw new Error(`unread state of user ${userId} stays fenced (its master keeps changing, or Redis losing it)`);
      reply = await rebuildOnce(userId, mode, reply[5]);
    }
    return reply;
  }

  /**
   * A rebuild for a caller that found the user's state missing (an apply, a snapshot): it takes a rebuild of the
   * same user already under way, if that one has not yet sent its write, instead of reading the database again. A
   * burst of events for one user after Redis lost their keys (many messages in flight to them, all their tabs
   * resyncing) then reads their memberships once, not once per event, and leaves the turns to other users; for a
   * user in 5000 conversations one read is some 100–300 ms (docs/benchmarks.md, "A twenty-third look").
   *
   * The caller needs the state to exist, not a read made after its event: the event committed before its apply, and
   * every caller applies its event (or reads its snapshot) after the rebuild, so one the read missed is applied on
   * top (an apply is idempotent). Once the write has gone out the rebuild is not joined: state missing after that
   * was lost again (or was never written, a fenced write being retried), and a caller then starts a rebuild of its
   * own. A rebuild that fails fails its joiners with it, as their own would have.
   */
  function rebuildMissing(userId: number): Promise<RebuildReply> {
    const running = joinable.get(userId);
    if (running) {
      onRebuild?.("joined");
      return running;
    }
    const closeJoin = () => {
      if (joinable.get(userId) === shared) joinable.delete(userId);
    };
    const shared = rebuildFrom(userId, "merge", closeJoin);
    joinable.set(userId, shared);
    shared.then(closeJoin, closeJoin);
    return shared;
  }

  async function rebuildOnce(
    userId: number,
    mode: "merge" | "replace",
    term?: string,
    beforeWrite?: () => void,
  ): Promise<RebuildReply> {
    // Before the read: if Redis loses the user's keys after it, the ticket goes with them and the write is refused.
    const ticket = await redis.tallyTicket(userKeys(userId, prefix).meta, newEpoch());
    // Keys lost while this waits for its turn take the ticket with them: rebuild.lua then answers "fenced", unless
    // another rebuild has written the state again meanwhile, which it merges into (by maxima, so safely).
    const { rows, mentions, own, deleted, left, unread } = await rebuildTurn(async () => {
      onRebuild?.("read");
      const read = await membershipsAndMentions(userId);
      return {
        ...read,
        // After the memberships: a departure that committed in between is then in this list, and wins.
        left: await departures(userId),
        unread: ttlMs > 0 ? await unreadMessages(userId, read.rows) : [],
      };
    });
    // Built with loops and handed to ioredis as one array (it flattens its arguments): a spread of more than some
    // 100k elements, into push() or into the call, overflows V8's stack, and a user mentioned tens of thousands of
    // times has that many (docs/security.md, "Mention floods").
    const args: (number | string)[] = [];
    for (const t of rows) args.push(t.conversationId, t.lastSeq, t.lastReadSeq, ...registerArgs(t));
    const pairs = (tag: string, byConversation: Map<number, number[]>) => {
      if (byConversation.size === 0) return;
      args.push(tag);
      for (const [conversationId, seqs] of byConversation) for (const seq of seqs) args.push(conversationId, seq);
    };
    pairs("mentions", mentions);
    pairs("own", own);
    pairs("deleted", deleted);
    if (left.length > 0) {
      args.push("gone");
      for (const conversationId of left) args.push(conversationId);
    }
    if (ttlMs > 0) {
      // Every unread message with its createdAt, except that of those already expired the highest seq per
      // conversation says as much as all of them (aged is a max-register): the rebuild stays bounded by the
      // messages still inside the TTL.
      const nowMs = await expiryNowMs();
      const cutoff = nowMs - ttlMs;
      const expired = new Map<number, [number, number]>();
      const live: number[] = [];
      for (const m of unread) {
        if (m.createdAtMs < cutoff) expired.set(m.conversationId, [m.seq, m.createdAtMs]);
        else live.push(m.conversationId, m.seq, m.createdAtMs);
      }
      args.push("ttl", ttlMs);
      if (clock) args.push("now", nowMs);
      for (const [conversationId, [seq, at]] of expired) args.push(conversationId, seq, at);
      for (const n of live) args.push(n);
    }
    const fence = [...(term === undefined ? [] : ["term", term]), "ticket", ticket];
    beforeWrite?.();
    return redis.tallyRebuild(...rebuildScriptKeys(userId, prefix), newEpoch(), mode, ...fence, args);
  }

  function applyArgs(e: UnreadEvent): Parameters<Redis["tallyApply"]> {
    const keys = unreadScriptKeys(e.userId, prefix);
    const parts = applyParts(e);
    const now = clock ? clock() : parts.length > 0 ? "" : undefined;
    const args = [...keys, e.conversationId, e.seenSeq, e.readSeq, e.createdAtMs ?? 0, ttlMs] as const;
    return now === undefined ? [...args] : [...args, now, ...parts];
  }

  async function applyOne(event: UnreadEvent): Promise<AppliedEvent> {
    const { userId, conversationId } = event;
    let result = updateOf(conversationId, await redis.tallyApply(...applyArgs(event)));
    if (result) return { userId, ...result };
    // State was missing: the rebuild reads the database, which already holds this event. If the event is late,
    // for a conversation the user has left since, the rebuild marked it "gone" from the departures, and the
    // apply ignores it.
    const rebuilt = await rebuildMissing(userId);
    result = updateOf(conversationId, await redis.tallyApply(...applyArgs(event)));
    if (!result) throw new Error(`unread state of user ${userId} vanished right after its rebuild`);
    return { userId, update: result.update, changed: result.changed || rebuilt[3] !== "unchanged" };
  }

  /**
   * Applies many events (a message fans out to every member). A few (a direct conversation, a small group) go as
   * calls of their own: an ioredis pipeline object costs more CPU to build than a few writes. Many go in one
   * pipeline per node. An error (missing state, or MOVED for a slot resharded since the last refresh) is retried on
   * its own.
   */
  async function applyMany(events: UnreadEvent[]): Promise<AppliedEvent[]> {
    if (events.length < PIPELINE_FROM) {
      return Promise.all(
        events.map(async (event) => {
          const reply = await redis.tallyApply(...applyArgs(event)).catch(() => null);
          const result = reply === null ? null : updateOf(event.conversationId, reply);
          return result ? { userId: event.userId, ...result } : applyOne(event);
        }),
      );
    }
    // One pipeline per node on a cluster (a cluster pipeline cannot span nodes), one in all on a single server.
    const applied: AppliedEvent[] = new Array<AppliedEvent>(events.length);
    const groups = groupByNode(redis, [...events.keys()], (i) => unreadScriptKeys(events[i]!.userId, prefix)[0]);
    await Promise.all(
      groups.map(async (group) => {
        const pipeline = redis.pipeline();
        for (const i of group) pipeline.tallyApply(...applyArgs(events[i]!));
        const replies = (await pipeline.exec()) ?? [];
        // An error (missing state, or MOVED for a slot resharded since the last refresh) is retried on its own.
        await Promise.all(
          group.map(async (i, at) => {
            const event = events[i]!;
            const [err, reply] = replies[at] ?? [new Error("missing pipeline reply"), null];
            const result = err ? null : updateOf(event.conversationId, reply as ApplyReply);
            applied[i] = result ? { userId: event.userId, ...result } : await applyOne(event);
          }),
        );
      }),
    );
    return applied;
  }

  /**
   * applyMany for a message's events, and the delivery published in the same Redis call (deliver.lua): the payload
   * is `head` followed by every member's reply as a JSON array, in the order of `events`. For message events (a
   * mention included; no registers) of fewer than PIPELINE_FROM members, on one redis-server; anything else goes
   * through applyMany, and `published` is false: the caller delivers on its own. So does a member whose state was
   * missing (rebuilt here). When the script failed (`failure`: after writing some members, perhaps), every member's
   * state is applied again and answered as changed, so the caller pushes each member's current counts: a member
   * already applied would otherwise answer "unchanged" and its push be lost (clients ignore a version they have).
   */
  async function applyAndPublish(
    events: UnreadEvent[],
    channel: string,
    head: string,
  ): Promise<{ applied: AppliedEvent[]; published: boolean; failure?: unknown }> {
    if (
      events.length === 0 ||
      events.length >= PIPELINE_FROM ||
      events.some((e) => e.registers !== undefined || e.deleted === true)
    ) {
      return { applied: await applyMany(events), published: false };
    }
    const keys = events.flatMap((e) => unreadScriptKeys(e.userId, prefix));
    const args = events.flatMap((e) => [
      e.conversationId,
      e.seenSeq,
      e.readSeq,
      e.createdAtMs ?? 0,
      ttlMs,
      clock ? clock() : "",
      e.mention ? "mention" : e.own ? "own" : "",
    ]);
    let reply: [0 | 1, ...ApplyReply[]];
    try {
      reply = await redis.tallyDeliver(keys.length, ...keys, channel, head, ...args);
    } catch (failure) {
      const applied = await applyMany(events);
      return { applied: applied.map((a) => ({ ...a, changed: true })), published: false, failure };
    }
    // The script publishes only when no member was missing; a missing one is rebuilt and applied here.
    const [sent, ...replies] = reply;
    const published = sent === 1;
    const applied = await Promise.all(
      events.map(async (event, i) => {
        const result = updateOf(event.conversationId, replies[i] ?? [-1]);
        return result ? { userId: event.userId, ...result } : applyOne(event);
      }),
    );
    // Every member applied and still not published: the PUBLISH itself failed (an ACL without the channel).
    return !published && replies.every((r) => r.length > 1)
      ? { applied, published, failure: new Error(`deliver.lua could not publish on ${channel}`) }
      : { applied, published };
  }

  /**
   * The epoch and version of a user's state, or null when it is missing: what a snapshot taken later compares
   * with to know whether its counts moved in between (no conversation enters or leaves a snapshot's counts, and no
   * count grows, without moving the version or, with a rebuild or expiry, the epoch: the scripts' rule). One HMGET.
   */
  async function stamp(userId: number): Promise<{ epoch: string; version: number } | null> {
    const [epoch, version] = await redis.hmget(userKeys(userId, prefix).meta, "epoch", "version");
    return epoch ? { epoch, version: Number(version) || 0 } : null;
  }

  async function snapshot(userId: number): Promise<UnreadCounts> {
    const keys = unreadScriptKeys(userId, prefix);
    const read = async () =>
      // Without expiry a snapshot only reads: a plain read, unless only the script can answer (fenced state).
      (ttlMs === 0 ? await readPlainSnapshot(redis, keys) : null) ??
      readOfReply(
        await (clock
          ? redis.tallySnapshotExpiring(...keys, ttlMs, clock())
          : redis.tallySnapshotExpiring(...keys, ttlMs)),
      );
    let state = await read();
    if (typeof state === "number") {
      // Missing (-1) or a stored sum that drifted from its parts (-2): both are fixed from the database. A repaired
      // drift may have reached the user's other tabs in pushes (apply.lua keeps a drift as it finds it): they resync.
      const drifted = state === -2;
      await (drifted ? rebuild(userId) : rebuildMissing(userId));
      if (drifted) onResync?.(userId);
      state = await read();
    }
    if (typeof state === "number") throw new Error(`unread state of user ${userId} could not be rebuilt (${state})`);
    const { expired, ...counts } = state;
    if (expired) onResync?.(userId);
    return counts;
  }

  /** Takes a conversation out of a user's counters (they left it, or it was deleted). */
  async function remove(userId: number, conversationId: number): Promise<AppliedEvent | null> {
    const result = updateOf(
      conversationId,
      await redis.tallyRemove(
        ...unreadScriptKeys(userId, prefix),
        conversationId,
        clock ? clock() : "",
        DEPARTURE_MEMORY_MS,
      ),
    );
    // Missing state needs nothing: the next rebuild reads memberships, which no longer list the conversation, and
    // departures, which mark it "gone".
    return result ? { userId, ...result } : null;
  }

  /**
   * What one conversation shows its user: apply.lua with an event that moves nothing (seen and read 0), so it costs
   * the same whatever the user's number of conversations, where a snapshot lists them all. The call can still
   * change the user's state, and no push tells their tabs, so they resync when it did: expiry at read time (in this
   * conversation or, with a new epoch, in others), or a rebuild of state that was missing (once per user after
   * Redis lost it; their tabs would resync at the next push anyway).
   */
  async function view(userId: number, conversationId: number): Promise<UnreadState> {
    const { update, changed } = await applyOne({ userId, conversationId, seenSeq: 0, readSeq: 0 });
    if (changed) onResync?.(userId);
    const { unreadCount, mentionCount, muted, markedUnread, markVersion } = update;
    return { unreadCount, mentionCount, muted, markedUnread, markVersion };
  }

  /**
   * Forgets the "gone" mark of a conversation the user is being added to (docs/consistency.md, "Joining a group"):
   * only ever for someone with no departure from it in the database, so any mark is over a day old (departures are
   * kept a day) and no late event it guards against can come any more.
   */
  async function forgetGone(userId: number, conversationId: number): Promise<void> {
    await redis.hdel(userKeys(userId, prefix).gone, String(conversationId));
  }

  /** Everything Redis holds for the user, after expiring what the TTL says (reconciliation). */
  async function inspect(userId: number): Promise<InspectReply> {
    const keys = unreadScriptKeys(userId, prefix);
    const reply = await (clock ? redis.tallyInspect(...keys, ttlMs, clock()) : redis.tallyInspect(...keys, ttlMs));
    if (reply.length > 1 && reply[7] === 1) onResync?.(userId);
    return reply;
  }

  return {
    applyOne,
    applyMany,
    applyAndPublish,
    stamp,
    snapshot,
    view,
    rebuild,
    remove,
    forgetGone,
    truth,
    inspect,
    ttlMs,
    /** Rebuilds waiting for a turn to read the database (those reading not counted): the metrics. */
    rebuildsWaiting: () => rebuildTurn.pendingCount,
  };
}
