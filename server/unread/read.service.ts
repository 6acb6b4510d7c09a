import type { UnreadUpdate, UserDTO } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { AppError } from "../errors.ts";
import type { Outbox, OutboxEntry } from "../outbox/outbox.ts";
import type { Notifier } from "../realtime/notifier.ts";
import type { UnreadService } from "./unread.service.ts";

export type ReadService = ReturnType<typeof createReadService>;

/**
 * Reading: a read cursor moved durably in PostgreSQL, then applied to the reader's counters and pushed to their
 * tabs. Its outbox entry is completed here once Redis has it, or replayed by the relay (`replay`).
 */
export function createReadService(deps: { db: Db; unread: UnreadService; notifier: Notifier; outbox: Outbox }) {
  const { db, unread, notifier, outbox } = deps;

  /**
   * Moves the reader's cursor to max(cursor, seq) clamped to the conversation's lastSeq, durably, with an outbox
   * entry for the counters, in one statement. Returns the cursor and the conversation's lastSeq (both true
   * observations).
   */
  async function moveCursor(reader: UserDTO, conversationId: number, seq: number) {
    const [row] = await db.$queryRaw<{ lastReadSeq: number; lastSeq: number }[]>`
      WITH moved AS (
        UPDATE "Membership" AS m SET "lastReadSeq" = GREATEST(m."lastReadSeq", LEAST(${seq}::int, c."lastSeq"))
        FROM "Conversation" AS c
        WHERE c."id" = m."conversationId" AND m."userId" = ${reader.id} AND m."conversationId" = ${conversationId}
        RETURNING m."lastReadSeq", c."lastSeq"
      ), outbox AS (
        INSERT INTO "OutboxEvent" ("kind", "conversationId", "userId", "seq")
        SELECT 'read'::"OutboxKind", ${conversationId}, ${reader.id}, "lastReadSeq" FROM moved
      )
      SELECT "lastReadSeq", "lastSeq" FROM moved`;
    if (!row) throw new AppError("forbidden", "You are not a member of this conversation.");
    return { cursor: row.lastReadSeq, lastSeq: row.lastSeq };
  }

  /** Applies a durable cursor (and the conversation's lastSeq, also a true observation) and pushes the change. */
  async function applyCursor(userId: number, conversationId: number, cursor: number, lastSeq: number) {
    const applied = await unread.applyOne({ userId, conversationId, seenSeq: lastSeq, readSeq: cursor });
    if (applied.changed) notifier.unreadChanged(userId, applied.update);
    return applied;
  }

  /** `conversation:read`: the cursor moves durably, then the counters follow. */
  async function markRead(
    reader: UserDTO,
    conversationId: number,
    seq: number,
  ): Promise<{ unread: UnreadUpdate; changed: boolean }> {
    const { cursor, lastSeq } = await moveCursor(reader, conversationId, seq);
    const applied = await applyCursor(reader.id, conversationId, cursor, lastSeq);
    await outbox.complete([{ kind: "read", conversationId, userId: reader.id, seq: cursor }]);
    return { unread: applied.update, changed: applied.changed };
  }

  /** The relay's replay of a `read` entry, against the conversation's current lastSeq. */
  async function replay(entry: OutboxEntry): Promise<void> {
    const membership = await db.membership.findUnique({
      where: { userId_conversationId: { userId: entry.userId, conversationId: entry.conversationId } },
      select: { conversation: { select: { lastSeq: true } } },
    });
    if (!membership) return; // left or deleted since: the removal entry takes the counters out
    await applyCursor(entry.userId, entry.conversationId, entry.seq, membership.conversation.lastSeq);
  }

  return { markRead, replay };
}
