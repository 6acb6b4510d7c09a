import { toConversationDTO, toMessageDTO, type ConversationRow } from "../contracts/dto.ts";
import type { ConversationDTO, MessageDTO, Snapshot, UserDTO } from "../contracts/index.ts";
import { Prisma } from "../db/generated/client.ts";
import type { Db } from "../db/prisma.ts";
import { AppError } from "../errors.ts";
import { NO_UNREAD, type UnreadService } from "./unread.service.ts";

export type SnapshotService = ReturnType<typeof createSnapshotService>;

/**
 * A row of the list's statement: the conversation, its members as parallel arrays (null for none) and its newest
 * message's columns (null for none).
 */
type ListRow = Omit<ConversationRow, "memberships"> & {
  ids: number[] | null;
  cursors: number[] | null;
  names: string[] | null;
  bots: boolean[] | null;
  lastId: number | null;
  lastSenderId: number | null;
  lastSenderName: string | null;
  lastContent: string | null;
  lastCreatedAt: Date | null;
  lastClientMsgId: string | null;
};

/** What a tab syncs from: the user's conversations with their unread counts, whole or one at a time. */
export function createSnapshotService({ db, unread }: { db: Db; unread: UnreadService }) {
  /**
   * Conversations with their members (names, cursors) and their message at lastSeq, from one statement: the
   * user's whole list (`memberId`) or one conversation. Each conversation's members are gathered from its index, as
   * parallel arrays in one order (building JSON took PostgreSQL twice as long), and each newest message is a join
   * on the (conversationId, seq) key. For a user in 5000 conversations that is one statement of about 40 ms in
   * PostgreSQL instead of Prisma's query per relation and an OR of 5000 pairs for the messages, which took over
   * half a second (docs/benchmarks.md, "Big user").
   */
  async function conversations(
    where: { memberId: number } | { conversationId: number },
  ): Promise<{ row: ConversationRow; last: MessageDTO | null }[]> {
    const wanted =
      "memberId" in where
        ? Prisma.sql`SELECT "conversationId" AS "id" FROM "Membership" WHERE "userId" = ${where.memberId}`
        : Prisma.sql`SELECT ${where.conversationId}::int AS "id"`;
    // The members are aggregated per conversation (LATERAL, an index scan each), not in one GROUP BY joined
    // afterwards: with statistics taken before a user's memberships arrived in bulk, the planner expects one
    // wanted conversation and puts that whole aggregate inside a nested loop, rebuilding it for every
    // conversation (2000 groups: 4.5 s instead of 0.1 s, docs/benchmarks.md). Names come from one primary-key
    // lookup per member: joined to "User" in the lateral, the same stale statistics chose a merge join that walked
    // the user table for every conversation (1 s). No plan of this statement is quadratic.
    const rows = await db.$queryRaw<ListRow[]>`
      WITH wanted AS (${wanted})
      SELECT c."id", c."kind"::TEXT AS "kind", c."title", c."lastSeq", c."createdAt",
        members."ids", members."cursors", members."names", members."bots",
        m."id" AS "lastId", m."senderId" AS "lastSenderId", s."name" AS "lastSenderName", m."content" AS "lastContent",
        m."createdAt" AS "lastCreatedAt", m."clientMsgId" AS "lastClientMsgId"
      FROM wanted
      JOIN "Conversation" c ON c."id" = wanted."id"
      CROSS JOIN LATERAL (
        SELECT array_agg(mb."userId" ORDER BY mb."userId") AS "ids",
          array_agg(mb."lastReadSeq" ORDER BY mb."userId") AS "cursors",
          array_agg((SELECT u."name" FROM "User" u WHERE u."id" = mb."userId") ORDER BY mb."userId") AS "names",
          array_agg((SELECT u."isBot" FROM "User" u WHERE u."id" = mb."userId") ORDER BY mb."userId") AS "bots"
        FROM "Membership" mb WHERE mb."conversationId" = c."id") members
      LEFT JOIN "Message" m ON m."conversationId" = c."id" AND m."seq" = c."lastSeq"
      LEFT JOIN "User" s ON s."id" = m."senderId"`;
    return rows.map((r) => ({
      row: {
        id: r.id,
        kind: r.kind,
        title: r.title,
        lastSeq: r.lastSeq,
        createdAt: r.createdAt,
        memberships: (r.ids ?? []).map((userId, i) => ({
          userId,
          lastReadSeq: r.cursors![i]!,
          user: { id: userId, name: r.names![i]!, isBot: r.bots![i]! },
        })),
      },
      last:
        r.lastId === null
          ? null
          : toMessageDTO({
              id: r.lastId,
              conversationId: r.id,
              seq: r.lastSeq,
              senderId: r.lastSenderId!,
              sender: { name: r.lastSenderName! },
              content: r.lastContent!,
              createdAt: r.lastCreatedAt!,
              clientMsgId: r.lastClientMsgId!,
            }),
    }));
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
      const rows = await conversations({ memberId: user.id });
      const listed = new Set(rows.map((r) => r.row.id));
      const orphans = [...counts.counts.keys()].filter((id) => !listed.has(id));
      if (orphans.length > 0) {
        // Their counts are in the totals and they are not in the list: answering would show a badge its rows do
        // not add up to. Fail the sync instead (the tab retries) if removing them does not take.
        if (attempt >= 3)
          throw new Error(
            `user ${user.id}: Redis still counts conversations ${orphans.join(", ")} the database no longer lists`,
          );
        // The removal committed but its Redis step has not run (or failed): run it now; it is idempotent.
        for (const conversationId of orphans) await unread.remove(user.id, conversationId);
        continue;
      }
      // Each conversation's time once, not twice per comparison (5000 conversations: 120 000 Date.parse calls).
      const list = rows
        .map(({ row, last }) => toConversationDTO(row, user.id, counts.counts.get(row.id) ?? NO_UNREAD, last))
        .map((c) => ({ c, at: activity(c) }))
        .sort((a, b) => b.at - a.at || b.c.id - a.c.id)
        .map(({ c }) => c);
      return {
        conversations: list,
        totalUnread: counts.totalUnread,
        totalMentions: counts.totalMentions,
        version: counts.version,
        epoch: counts.epoch,
      };
    }
  }

  /**
   * One conversation as each of `viewerIds` sees it (for `conversation:created` and `conversation:updated`, sent to
   * every member), in their order: the conversation read once, each viewer's counts from one apply.lua call, not
   * their whole snapshot.
   */
  async function describeFor(conversationId: number, viewerIds: number[]): Promise<ConversationDTO[]> {
    const [[found], counts] = await Promise.all([
      conversations({ conversationId }),
      Promise.all(viewerIds.map((viewerId) => unread.view(viewerId, conversationId))),
    ]);
    if (!found) throw new AppError("not_found", "This conversation no longer exists.");
    return viewerIds.map((viewerId, i) => toConversationDTO(found.row, viewerId, counts[i]!, found.last));
  }

  /** One conversation as `viewerId` sees it. */
  async function describe(conversationId: number, viewerId: number): Promise<ConversationDTO> {
    const [conversation] = await describeFor(conversationId, [viewerId]);
    return conversation!;
  }

  return { snapshot, describe, describeFor };
}

/** Its last message's time, or its creation time while it has none: a new conversation is recent activity. */
function activity(c: ConversationDTO): number {
  return Date.parse(c.lastMessage?.createdAt ?? c.createdAt);
}
