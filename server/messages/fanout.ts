import { messageInclude, toMessageDTO } from "../contracts/dto.ts";
import type { MessageDTO } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import type { Logger } from "../log.ts";
import { since, type SendStage } from "../metrics/metrics.ts";
import type { Outbox, OutboxEntry } from "../outbox/outbox.ts";
import type { Notifier } from "../realtime/notifier.ts";
import type { UnreadEvent, UnreadService } from "../unread/unread.service.ts";

/**
 * One message as counter events, one per member: the sender's says it is theirs (`own`: it never counts for them,
 * and moves their cursor only over nothing unread), and each member the message mentions (its stored Mention rows)
 * gets `mention`; a deleted message's (`deleted`, server/messages/deletion.ts) say so to everyone else instead, and
 * it never counts for anyone. A member added to the group after it began carries the seq they joined at as their read cursor
 * (`floors`): nothing up to it counts for them, whichever of their events reaches Redis first (docs/consistency.md,
 * "Joining a group").
 */
export function messageEvents(
  message: { conversationId: number; seq: number; senderId: number; createdAtMs?: number; deleted?: boolean },
  memberIds: number[],
  mentionedIds: readonly number[] = [],
  floors?: ReadonlyMap<number, number>,
): UnreadEvent[] {
  const mentioned = new Set(mentionedIds);
  return memberIds.map((userId) => ({
    userId,
    conversationId: message.conversationId,
    seenSeq: message.seq,
    readSeq: floors?.get(userId) ?? 0,
    ...(message.createdAtMs !== undefined ? { createdAtMs: message.createdAtMs } : {}),
    ...(userId === message.senderId
      ? { own: true }
      : message.deleted
        ? { deleted: true }
        : mentioned.has(userId)
          ? { mention: true }
          : {}),
  }));
}

export type MessageFanout = ReturnType<typeof createMessageFanout>;

/**
 * A stored message reaching its members: one counter event per member, then one delivery of the message and the
 * counts it changed to every tab. Always runs after the commit, whose outbox entry is completed here once Redis has
 * the counters, or replayed by the relay (`replay`) if the process dies first.
 */
export function createMessageFanout(deps: {
  db: Db;
  unread: UnreadService;
  notifier: Notifier;
  outbox: Outbox;
  log: Logger;
  /** Where the time of each stage goes (the /metrics histogram). */
  observe?: (stage: SendStage, seconds: number) => void;
}) {
  const { db, unread, notifier, outbox, log, observe } = deps;

  /**
   * deliver.lua failed and the message went the general way (its counts pushed all the same): logged at most once a
   * minute, since a cause such as an ACL without the delivery channel fails every message alike.
   */
  let lastDeliverWarning = Number.NEGATIVE_INFINITY;
  function deliverFailed(err: unknown): void {
    const now = Date.now();
    if (now - lastDeliverWarning < 60_000) return;
    lastDeliverWarning = now;
    log.warn({ err }, "deliver.lua failed; messages go the general way (apply.lua, then a server-side emit)");
  }

  /**
   * Applies a message to every member's counters, then pushes it with what changed: one delivery for all members
   * and tabs. Without `message` (the relay found it deleted since) only the counters' changes go out. If the
   * counters fail (Redis away), the message still goes out, without counts, and the error is thrown on.
   */
  async function applyAndPush(
    event: Parameters<typeof messageEvents>[0],
    message: MessageDTO | null,
    memberIds: number[],
    mentionedIds: readonly number[],
    floors: ReadonlyMap<number, number>,
  ): Promise<void> {
    let start = process.hrtime.bigint();
    let applied: Awaited<ReturnType<UnreadService["applyMany"]>>;
    let published = false;
    try {
      const events = messageEvents(event, memberIds, mentionedIds, floors);
      // On one redis-server the counters and the delivery to the other instances are one Redis call.
      const target = message ? notifier.deliveryTarget(memberIds, message) : null;
      if (target) {
        let failure: unknown;
        ({ applied, published, failure } = await unread.applyAndPublish(events, target.channel, target.head));
        if (failure !== undefined) deliverFailed(failure);
      } else applied = await unread.applyMany(events);
    } catch (err) {
      if (message) notifier.messageDelivered({ memberIds, message, updates: [] });
      throw err;
    }
    observe?.("counters", since(start));
    start = process.hrtime.bigint();
    const updates = applied.filter((a) => a.changed).map(({ userId, update }) => ({ userId, update }));
    if (message) notifier.messageDelivered({ memberIds, message, updates }, published);
    else for (const u of updates) notifier.unreadChanged(u.userId, u.update);
    observe?.("push", since(start));
  }

  /**
   * Applies a stored message to every member's counters (one script call each; a pipeline for large groups) and
   * announces it with the counts it changed. The sender's call says the message is theirs, so their unread never
   * counts it. A failure here loses nothing: the message is in the database and its outbox entry stays for the
   * relay.
   */
  async function deliver(
    message: MessageDTO,
    memberIds: number[],
    mentionedIds: readonly number[],
    /** The send's outbox entry, completed in the background; null (a retried send): completed by content. */
    outboxId: number | null,
    /** The joined-at seqs of members added later (Sent.floors). */
    floors: ReadonlyMap<number, number>,
  ): Promise<void> {
    try {
      const event = { ...message, createdAtMs: Date.parse(message.createdAt) };
      await applyAndPush(event, message, memberIds, mentionedIds, floors);
      if (outboxId !== null) outbox.completeSoon([outboxId]);
      else
        await outbox.complete([
          { kind: "message", conversationId: message.conversationId, userId: message.senderId, seq: message.seq },
        ]);
    } catch (err) {
      log.error({ err, messageId: message.id }, "unread fan-out failed; the outbox relay will replay it");
    }
  }

  /** The relay's replay of a `message` entry: the same pushes and counter events (mentions too), from the database. */
  async function replay(entry: OutboxEntry): Promise<void> {
    const conversation = await db.conversation.findUnique({
      where: { id: entry.conversationId },
      select: { memberships: { select: { userId: true, joinedSeq: true } } },
    });
    if (!conversation) return; // deleted since: its removal entries take the counters out
    const memberIds = conversation.memberships.map((m) => m.userId);
    // The members as they are now: one added since this message was stored joined at or above its seq, so their
    // floor keeps it from counting for them.
    const floors = new Map(conversation.memberships.filter((m) => m.joinedSeq > 0).map((m) => [m.userId, m.joinedSeq]));
    const [message, mentions] = await Promise.all([
      db.message.findUnique({
        where: { conversationId_seq: { conversationId: entry.conversationId, seq: entry.seq } },
        include: messageInclude,
      }),
      db.mention.findMany({
        where: { conversationId: entry.conversationId, seq: entry.seq },
        select: { userId: true },
      }),
    ]);
    // Tabs connected to the instance that died never heard of it; clients drop duplicates by id. A message deleted
    // since goes out deleted, and its events say so (its deletion's entry says the same, in either order).
    await applyAndPush(
      {
        conversationId: entry.conversationId,
        seq: entry.seq,
        senderId: entry.userId,
        ...(message ? { createdAtMs: message.createdAt.getTime() } : {}),
        ...(message?.deletedAt ? { deleted: true } : {}),
      },
      message ? toMessageDTO(message) : null,
      memberIds,
      mentions.map((m) => m.userId),
      floors,
    );
  }

  return { deliver, replay };
}
