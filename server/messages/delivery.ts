import type { MessageDTO, UnreadUpdate } from "../contracts/index.ts";
import type { Logger } from "../log.ts";
import type { Notifier } from "../realtime/notifier.ts";
import type { UnreadService } from "../unread/unread.service.ts";

export type Delivery = ReturnType<typeof createDelivery>;

/** Turns durable database changes into counter updates and pushes. Always runs after the commit. */
export function createDelivery({ unread, notifier, log }: { unread: UnreadService; notifier: Notifier; log: Logger }) {
  /**
   * Announces a stored message and applies it to every member's counters (one script call each, in one
   * pipeline). The sender's call also moves their own cursor, so their unread never counts it.
   * A failure here loses no message: it is already in the database, the counters are rebuilt from there.
   */
  async function deliverMessage(message: MessageDTO, memberIds: number[]): Promise<void> {
    notifier.messageNew(memberIds, message);
    try {
      const applied = await unread.applyMany(
        memberIds.map((userId) => ({
          userId,
          conversationId: message.conversationId,
          seenSeq: message.seq,
          readSeq: userId === message.senderId ? message.seq : 0,
        })),
      );
      for (const a of applied) if (a.changed) notifier.unreadChanged(a.userId, a.update);
    } catch (err) {
      log.error({ err, messageId: message.id }, "unread fan-out failed; counters will be rebuilt from the database");
    }
  }

  /** Applies a durable read cursor (and the conversation's lastSeq, also a true observation) and pushes. */
  async function deliverRead(
    userId: number,
    conversationId: number,
    cursor: number,
    lastSeq: number,
  ): Promise<UnreadUpdate> {
    const applied = await unread.applyOne({ userId, conversationId, seenSeq: lastSeq, readSeq: cursor });
    if (applied.changed) notifier.unreadChanged(userId, applied.update);
    return applied.update;
  }

  return { deliverMessage, deliverRead };
}
