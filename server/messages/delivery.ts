import type { MessageDTO, UnreadUpdate } from "../contracts/index.ts";
import type { Logger } from "../log.ts";
import type { Outbox } from "../outbox/outbox.ts";
import type { Notifier } from "../realtime/notifier.ts";
import type { UnreadEvent, UnreadService } from "../unread/unread.service.ts";

export type Delivery = ReturnType<typeof createDelivery>;

/** One message as counter events, one per member: the sender's also moves their own cursor to it. */
export function messageEvents(
  message: { conversationId: number; seq: number; senderId: number; createdAtMs?: number },
  memberIds: number[],
): UnreadEvent[] {
  return memberIds.map((userId) => ({
    userId,
    conversationId: message.conversationId,
    seenSeq: message.seq,
    readSeq: userId === message.senderId ? message.seq : 0,
    ...(message.createdAtMs !== undefined ? { createdAtMs: message.createdAtMs } : {}),
  }));
}

/**
 * Turns durable database changes into counter updates and pushes. Always runs after the commit; each change
 * left an outbox entry in its transaction, completed here once Redis has it, or replayed by the relay if the
 * process dies first.
 */
export function createDelivery(deps: { unread: UnreadService; notifier: Notifier; outbox: Outbox; log: Logger }) {
  const { unread, notifier, outbox, log } = deps;

  /**
   * Announces a stored message and applies it to every member's counters (one script call each, in one
   * pipeline). The sender's call also moves their own cursor, so their unread never counts it.
   * A failure here loses nothing: the message is in the database and its outbox entry stays for the relay.
   */
  async function deliverMessage(message: MessageDTO, memberIds: number[]): Promise<void> {
    notifier.messageNew(memberIds, message);
    try {
      const applied = await unread.applyMany(
        messageEvents({ ...message, createdAtMs: Date.parse(message.createdAt) }, memberIds),
      );
      for (const a of applied) if (a.changed) notifier.unreadChanged(a.userId, a.update);
      await outbox.complete([
        { kind: "message", conversationId: message.conversationId, userId: message.senderId, seq: message.seq },
      ]);
    } catch (err) {
      log.error({ err, messageId: message.id }, "unread fan-out failed; the outbox relay will replay it");
    }
  }

  /** Applies a durable read cursor (and the conversation's lastSeq, also a true observation) and pushes. */
  async function deliverRead(
    userId: number,
    conversationId: number,
    cursor: number,
    lastSeq: number,
  ): Promise<{ unread: UnreadUpdate; changed: boolean }> {
    const applied = await unread.applyOne({ userId, conversationId, seenSeq: lastSeq, readSeq: cursor });
    if (applied.changed) notifier.unreadChanged(userId, applied.update);
    await outbox.complete([{ kind: "read", conversationId, userId, seq: cursor }]);
    return { unread: applied.update, changed: applied.changed };
  }

  /** Takes a conversation out of former members' counters and lists. */
  async function deliverRemoval(conversationId: number, userIds: number[]): Promise<void> {
    for (const userId of userIds) {
      try {
        const applied = await unread.remove(userId, conversationId);
        if (applied?.changed) notifier.unreadChanged(userId, applied.update);
        await outbox.complete([{ kind: "remove", conversationId, userId, seq: 0 }]);
      } catch (err) {
        log.error(
          { err, userId, conversationId },
          "removing a conversation from counters failed; the relay will replay it",
        );
      }
      notifier.conversationRemoved(userId, conversationId);
    }
  }

  return { deliverMessage, deliverRead, deliverRemoval };
}
