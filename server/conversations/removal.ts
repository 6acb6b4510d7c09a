import type { ConversationRemoval } from "../contracts/index.ts";
import type { Logger } from "../log.ts";
import type { Outbox, OutboxEntry } from "../outbox/outbox.ts";
import type { Notifier } from "../realtime/notifier.ts";
import type { UnreadService } from "../unread/unread.service.ts";

export type Removal = ReturnType<typeof createRemoval>;

/**
 * A conversation leaving former members' counters and lists, after the membership change committed with one
 * outbox entry per member; completed here, or replayed by the relay (`replay`).
 */
export function createRemoval(deps: { unread: UnreadService; notifier: Notifier; outbox: Outbox; log: Logger }) {
  const { unread, notifier, outbox, log } = deps;

  async function apply(userId: number, conversationId: number): Promise<void> {
    const applied = await unread.remove(userId, conversationId);
    if (applied?.changed) notifier.unreadChanged(userId, applied.update);
  }

  /**
   * Takes the conversation out of each user's counters, then tells their tabs to drop it, and how it went; not the
   * `untold`, whose list never showed it (a direct conversation hidden from them: who deleted it is not theirs).
   */
  async function deliver(
    conversationId: number,
    userIds: number[],
    how: NonNullable<ConversationRemoval["how"]>,
    untold: readonly number[] = [],
  ): Promise<void> {
    for (const userId of userIds) {
      try {
        await apply(userId, conversationId);
        await outbox.complete([{ kind: "remove", conversationId, userId, seq: 0 }]);
      } catch (err) {
        log.error(
          { err, userId, conversationId },
          "removing a conversation from counters failed; the relay will replay it",
        );
      }
      if (!untold.includes(userId)) notifier.conversationRemoved(userId, { conversationId, how });
    }
  }

  /** The relay's replay of a `remove` entry. */
  async function replay(entry: OutboxEntry): Promise<void> {
    await apply(entry.userId, entry.conversationId);
    notifier.conversationRemoved(entry.userId, { conversationId: entry.conversationId });
  }

  return { deliver, replay };
}
