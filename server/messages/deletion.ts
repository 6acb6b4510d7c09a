import { messageInclude, toMessageDTO } from "../contracts/dto.ts";
import type { MessageDTO, UserDTO } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { Outbox, OutboxEntry } from "../outbox/outbox.ts";
import type { Notifier } from "../realtime/notifier.ts";
import type { UnreadService } from "../unread/unread.service.ts";
import { messageEvents } from "./fanout.ts";

export type DeletionService = ReturnType<typeof createDeletionService>;

/** A member's id and the seq they joined at (0: from the start). */
type Member = { userId: number; joinedSeq: number };

/**
 * Deleting a message: its sender takes it back, for everyone (docs/consistency.md, "7. Deleting a message"). In one
 * transaction the message row is locked, emptied and stamped `deletedAt`, its mentions go, and a `deletion` outbox
 * entry is written. Then every member's counters hear it (apply.lua's `deleted`: it never counts, its mention goes,
 * and nobody's cursor moves), and every member's tabs get `message:deleted` with the counts it
 * changed. The row stays: seqs stay whole, so cursors and counts stay arithmetic. The relay's `replay` tells the
 * counters again if the process died before they heard.
 */
export function createDeletionService(deps: {
  db: Db;
  unread: UnreadService;
  notifier: Notifier;
  outbox: Outbox;
  log: Logger;
}) {
  const { db, unread, notifier, outbox, log } = deps;

  /** The deletion's counter events (the sender's says `own`, as their send's did), then the pushes. */
  async function applyAndPush(message: MessageDTO, members: Member[], createdAtMs: number): Promise<void> {
    const memberIds = members.map((m) => m.userId);
    const floors = new Map(members.filter((m) => m.joinedSeq > 0).map((m) => [m.userId, m.joinedSeq]));
    const events = messageEvents(
      {
        conversationId: message.conversationId,
        seq: message.seq,
        senderId: message.senderId,
        createdAtMs,
        deleted: true,
      },
      memberIds,
      [],
      floors,
    );
    let applied: Awaited<ReturnType<UnreadService["applyMany"]>>;
    try {
      applied = await unread.applyMany(events);
    } finally {
      // The message goes out deleted whatever Redis did: counts follow with the relay's replay.
      notifier.messageDeleted(memberIds, message);
    }
    for (const a of applied) if (a.changed) notifier.unreadChanged(a.userId, a.update);
  }

  /**
   * `message:delete`: the caller's own message, in a conversation they are in. Refused with `not_found` for an id
   * that is no message of a conversation of theirs (whether it exists is not said), `forbidden` for someone else's.
   * A message deleted already answers as it is, `changed: false`, and writes nothing.
   */
  async function deleteMessage(user: UserDTO, messageId: number): Promise<{ message: MessageDTO; changed: boolean }> {
    const result = await db.$transaction(
      async (tx) => {
        const [row] = await tx.$queryRaw<{ senderId: number; deleted: boolean; conversationId: number; seq: number }[]>`
        SELECT m."senderId", m."deletedAt" IS NOT NULL AS "deleted", m."conversationId", m."seq"
        FROM "Message" m
        WHERE m."id" = ${messageId}
          AND EXISTS (SELECT 1 FROM "Membership" mb WHERE mb."userId" = ${user.id} AND mb."conversationId" = m."conversationId")
        FOR UPDATE OF m`;
        if (!row) throw new AppError("not_found", "There is no such message in your conversations.");
        if (row.senderId !== user.id) throw new AppError("forbidden", "You can delete only your own messages.");
        if (row.deleted) {
          return {
            changed: false as const,
            stored: await tx.message.findUniqueOrThrow({ where: { id: messageId }, include: messageInclude }),
          };
        }
        // The database's clock, as for every other time a row keeps.
        await tx.$executeRaw`UPDATE "Message" SET "deletedAt" = CURRENT_TIMESTAMP, "content" = '' WHERE "id" = ${messageId}`;
        const stored = await tx.message.findUniqueOrThrow({ where: { id: messageId }, include: messageInclude });
        await tx.mention.deleteMany({ where: { conversationId: row.conversationId, seq: row.seq } });
        const entry = await tx.outboxEvent.create({
          data: { kind: "deletion", conversationId: row.conversationId, userId: user.id, seq: row.seq },
          select: { id: true },
        });
        const members = await tx.membership.findMany({
          where: { conversationId: row.conversationId },
          select: { userId: true, joinedSeq: true },
        });
        return { changed: true as const, stored, outboxId: entry.id, members };
        // As long as the pool's own wait for a connection (db/prisma.ts), not Prisma's 2 s: a busy pool delays it.
      },
      { maxWait: 10_000 },
    );
    const message = toMessageDTO(result.stored);
    if (!result.changed) return { message, changed: false };
    try {
      await applyAndPush(message, result.members, result.stored.createdAt.getTime());
      outbox.completeSoon([result.outboxId]);
    } catch (err) {
      log.error({ err, messageId }, "a deletion's counters failed; the outbox relay will replay it");
    }
    return { message, changed: true };
  }

  /** The relay's replay of a `deletion` entry: the members as they are now hear it again (idempotent). */
  async function replay(entry: OutboxEntry): Promise<void> {
    const stored = await db.message.findUnique({
      where: { conversationId_seq: { conversationId: entry.conversationId, seq: entry.seq } },
      include: {
        ...messageInclude,
        conversation: { select: { memberships: { select: { userId: true, joinedSeq: true } } } },
      },
    });
    if (!stored) return; // its conversation was deleted since: the removal entries take the counters out
    const { conversation, ...row } = stored;
    await applyAndPush(toMessageDTO(row), conversation.memberships, row.createdAt.getTime());
  }

  return { deleteMessage, replay };
}
