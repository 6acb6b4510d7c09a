import { conversationInclude, toConversationDTO, toMessageDTO, type MessageRow } from "../contracts/dto.ts";
import type { ConversationDTO, MessageDTO, Snapshot, UserDTO } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { NO_UNREAD, type UnreadService } from "./unread.service.ts";

export type SnapshotService = ReturnType<typeof createSnapshotService>;

/** What a tab syncs from: the user's conversations with their unread counts, whole or one at a time. */
export function createSnapshotService({ db, unread }: { db: Db; unread: UnreadService }) {
  /**
   * The message at each row's lastSeq. One join against the (conversationId, seq) key for any number of rows: the
   * same look-up as `findMany` with an OR of pairs, which for a user in 5000 conversations took PostgreSQL and
   * Prisma over half a second to plan and run (docs/benchmarks.md, "Big user").
   */
  async function lastMessages(rows: { id: number; lastSeq: number }[]): Promise<Map<number, MessageDTO>> {
    const wanted = rows.filter((r) => r.lastSeq > 0);
    if (wanted.length === 0) return new Map();
    const messages = await db.$queryRaw<(Omit<MessageRow, "sender"> & { senderName: string })[]>`
      SELECT m."id", m."conversationId", m."seq", m."senderId", m."content", m."createdAt", m."clientMsgId",
        u."name" AS "senderName"
      FROM unnest(${wanted.map((r) => r.id)}::int[], ${wanted.map((r) => r.lastSeq)}::int[]) AS w("conversationId", "seq")
      JOIN "Message" m ON m."conversationId" = w."conversationId" AND m."seq" = w."seq"
      JOIN "User" u ON u."id" = m."senderId"`;
    return new Map(
      messages.map(({ senderName, ...m }) => [m.conversationId, toMessageDTO({ ...m, sender: { name: senderName } })]),
    );
  }

  /**
   * The conversation list with unread counts, total, version and epoch. Counts and total come from one
   * atomic script call, so they always agree with each other, and every count belongs to a listed conversation.
   */
  async function snapshot(user: UserDTO): Promise<Snapshot> {
    // Redis first, then the database: a conversation created in between has no count yet, so every count
    // belongs to a listed conversation, unless the user left it and Redis has not heard yet.
    for (let attempt = 0; ; attempt++) {
      const counts = await unread.snapshot(user.id);
      const rows = await db.conversation.findMany({
        where: { memberships: { some: { userId: user.id } } },
        include: conversationInclude,
      });
      const listed = new Set(rows.map((r) => r.id));
      const orphans = [...counts.counts.keys()].filter((id) => !listed.has(id));
      if (orphans.length > 0 && attempt < 3) {
        // The removal committed but its Redis step has not run (or failed): run it now; it is idempotent.
        for (const conversationId of orphans) await unread.remove(user.id, conversationId);
        continue;
      }
      const last = await lastMessages(rows);
      const conversations = rows
        .map((row) => toConversationDTO(row, user.id, counts.counts.get(row.id) ?? NO_UNREAD, last.get(row.id) ?? null))
        .sort((a, b) => activity(b) - activity(a) || b.id - a.id);
      return {
        conversations,
        totalUnread: counts.totalUnread,
        totalMentions: counts.totalMentions,
        version: counts.version,
        epoch: counts.epoch,
      };
    }
  }

  /** One conversation as `viewerId` sees it (for `conversation:created` and `conversation:updated`). */
  async function describe(conversationId: number, viewerId: number): Promise<ConversationDTO> {
    const row = await db.conversation.findUniqueOrThrow({
      where: { id: conversationId },
      include: conversationInclude,
    });
    const [last, counts] = await Promise.all([lastMessages([row]), unread.snapshot(viewerId)]);
    return toConversationDTO(row, viewerId, counts.counts.get(row.id) ?? NO_UNREAD, last.get(row.id) ?? null);
  }

  return { snapshot, describe };
}

/** Its last message's time, or its creation time while it has none: a new conversation is recent activity. */
function activity(c: ConversationDTO): number {
  return Date.parse(c.lastMessage?.createdAt ?? c.createdAt);
}
