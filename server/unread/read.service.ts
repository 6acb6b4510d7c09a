import type { UnreadUpdate, UserDTO } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { AppError } from "../errors.ts";
import type { Outbox, OutboxEntry } from "../outbox/outbox.ts";
import type { Notifier } from "../realtime/notifier.ts";
import { registersSelect, type MembershipRegisters, type UnreadService } from "./unread.service.ts";

export type ReadService = ReturnType<typeof createReadService>;

/**
 * Reading: a read cursor moved durably in PostgreSQL, then applied to the reader's counters and pushed to their
 * tabs. Its outbox entry is completed here once Redis has it, or replayed by the relay (`replay`).
 */
export function createReadService(deps: { db: Db; unread: UnreadService; notifier: Notifier; outbox: Outbox }) {
  const { db, unread, notifier, outbox } = deps;

  /**
   * Moves the reader's cursor to max(cursor, seq) clamped to the conversation's lastSeq, and on over the reader's
   * own messages right above it (the cursor never stops right below one: docs/consistency.md, "Own messages"),
   * durably, with an outbox entry for the counters: `tally_read_cursor`
   * (prisma/migrations/20261204010000_read_cursor_lock), one round trip. It locks the membership before it looks
   * at the messages, so a send of the reader's committing meanwhile is seen (the send statement locks the same
   * row). When the new cursor reaches lastSeq and the read names a mark (`markVersion`), the same call clears marks
   * up to it, never above the stored one: markClearedVersion = GREATEST(markClearedVersion, LEAST(markVersion
   * sent, markVersion stored)); a read sent before a newer mark cannot clear that mark (docs/consistency.md, "Why a
   * read names the mark it clears"). Returns the cursor, the conversation's lastSeq (both true observations), the
   * cleared register and the id of its outbox entry.
   */
  async function moveCursor(reader: UserDTO, conversationId: number, seq: number, markVersion: number | null) {
    const [row] = await db.$queryRaw<
      { lastReadSeq: number; lastSeq: number; markClearedVersion: number; outboxId: number }[]
    >`
      SELECT r_last_read_seq AS "lastReadSeq", r_last_seq AS "lastSeq",
        r_mark_cleared_version AS "markClearedVersion", r_outbox_id AS "outboxId"
      FROM tally_read_cursor(${reader.id}::int, ${conversationId}::int, ${seq}::int, ${markVersion}::int)`;
    if (!row) throw new AppError("forbidden", "You are not a member of this conversation.");
    return row;
  }

  /**
   * Applies a durable cursor (and the conversation's lastSeq, also a true observation) with the membership's
   * registers the caller knows, and pushes the change.
   */
  async function applyCursor(
    userId: number,
    conversationId: number,
    cursor: number,
    lastSeq: number,
    registers: Partial<MembershipRegisters>,
  ) {
    const applied = await unread.applyOne({ userId, conversationId, seenSeq: lastSeq, readSeq: cursor, registers });
    if (applied.changed) notifier.unreadChanged(userId, applied.update);
    return applied;
  }

  /** `conversation:read`: the cursor (and a mark it clears) moves durably, then the counters follow. */
  async function markRead(
    reader: UserDTO,
    conversationId: number,
    seq: number,
    markVersion?: number,
  ): Promise<{ unread: UnreadUpdate; changed: boolean }> {
    const moved = await moveCursor(reader, conversationId, seq, markVersion ?? null);
    const applied = await applyCursor(reader.id, conversationId, moved.lastReadSeq, moved.lastSeq, {
      markClearedVersion: moved.markClearedVersion,
    });
    outbox.completeSoon([moved.outboxId]);
    return { unread: applied.update, changed: applied.changed };
  }

  /**
   * The relay's replay of a `read` entry, against the conversation's current lastSeq and the membership's current
   * registers (versioned and max-registers: applying newer ones than the read saw is always safe).
   */
  async function replay(entry: OutboxEntry): Promise<void> {
    const membership = await db.membership.findUnique({
      where: { userId_conversationId: { userId: entry.userId, conversationId: entry.conversationId } },
      select: { ...registersSelect, conversation: { select: { lastSeq: true } } },
    });
    if (!membership) return; // left or deleted since: the removal entry takes the counters out
    const { conversation, ...registers } = membership;
    await applyCursor(entry.userId, entry.conversationId, entry.seq, conversation.lastSeq, registers);
  }

  return { markRead, replay };
}
