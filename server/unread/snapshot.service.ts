import { toConversationDTO, toMessageDTO, type ConversationRow } from "../contracts/dto.ts";
import type { ConversationDTO, MessageDTO, Snapshot, UserDTO } from "../contracts/index.ts";
import type pg from "pg";
import { poolOf, type Db } from "../db/prisma.ts";
import { AppError } from "../errors.ts";
import { NO_UNREAD, type UnreadService } from "./unread.service.ts";

export type SnapshotService = ReturnType<typeof createSnapshotService>;

/** A conversation with its newest message's columns (null for none), as the list's first statement answers it. */
type ListRow = Omit<ConversationRow, "memberships"> & {
  lastId: number | null;
  lastSenderId: number | null;
  lastSenderName: string | null;
  lastContent: string | null;
  lastCreatedAt: Date | null;
  lastClientMsgId: string | null;
};

/** A member of a listed conversation, as the list's second statement answers it. */
interface MemberRow {
  conversationId: number;
  userId: number;
  lastReadSeq: number;
  name: string;
  isBot: boolean;
}

/**
 * An id written into a statement's text (the simple query protocol, which runs several statements in one round
 * trip, takes no parameters): only a safe integer gets there, so nothing but digits and a sign ever does.
 */
export function sqlId(id: number): string {
  if (!Number.isSafeInteger(id)) throw new TypeError(`not an id: ${String(id)}`);
  return String(id);
}

/** What a tab syncs from: the user's conversations with their unread counts, whole or one at a time. */
export function createSnapshotService({ db, unread }: { db: Db; unread: UnreadService }) {
  const pool = poolOf(db);
  /**
   * Conversations with their members (names, cursors) and their message at lastSeq: the user's whole list
   * (`memberId`) or one conversation. Two plain joins, each a walk of indexes from the wanted conversations: the
   * conversations with their newest messages, and their members with names; Node groups the members. For a user in
   * 5000 conversations PostgreSQL executes the two in 16–26 ms, where one statement that aggregated each
   * conversation's members (a LATERAL of three index scans per conversation) took 58–70 ms (docs/benchmarks.md, "A
   * tenth look"). Neither joins an aggregate, so stale statistics (a user's memberships arriving in bulk) cannot
   * make a plan rebuild one per conversation (2000 groups once took 4.5 s that way). Both statements go in one
   * round trip (the simple query protocol) and one implicit transaction at REPEATABLE READ: they read one snapshot,
   * so every listed conversation has the members it had at that instant. An error rolls the transaction back, and
   * the pool closes the connection it failed on.
   */
  async function conversations(
    where: { memberId: number } | { conversationId: number },
  ): Promise<{ row: ConversationRow; last: MessageDTO | null }[]> {
    const wanted =
      "memberId" in where
        ? `SELECT "conversationId" AS "id" FROM "Membership" WHERE "userId" = ${sqlId(where.memberId)}`
        : `SELECT ${sqlId(where.conversationId)}::int AS "id"`;
    // Timestamps AT TIME ZONE 'UTC' (timestamptz): pg reads a plain timestamp in the process' own zone.
    const results: unknown = await pool.query(`
      SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;
      SELECT c."id", c."kind"::TEXT AS "kind", c."title", c."lastSeq", c."createdAt" AT TIME ZONE 'UTC' AS "createdAt",
        m."id" AS "lastId", m."senderId" AS "lastSenderId", s."name" AS "lastSenderName", m."content" AS "lastContent",
        m."createdAt" AT TIME ZONE 'UTC' AS "lastCreatedAt", m."clientMsgId" AS "lastClientMsgId"
      FROM (${wanted}) wanted
      JOIN "Conversation" c ON c."id" = wanted."id"
      LEFT JOIN "Message" m ON m."conversationId" = c."id" AND m."seq" = c."lastSeq"
      LEFT JOIN "User" s ON s."id" = m."senderId";
      SELECT mb."conversationId", mb."userId", mb."lastReadSeq", u."name", u."isBot"
      FROM (${wanted}) wanted
      JOIN "Membership" mb ON mb."conversationId" = wanted."id"
      JOIN "User" u ON u."id" = mb."userId"
      ORDER BY mb."conversationId", mb."userId"`);
    // One result per statement, in order: the SET's, the conversations', the members'.
    const [, listed, memberRows] = Array.isArray(results) ? (results as pg.QueryResult[]) : [];
    if (listed?.command !== "SELECT" || memberRows?.command !== "SELECT") {
      throw new Error("the conversation list's query did not answer its two SELECTs");
    }
    const members = new Map<number, ConversationRow["memberships"]>();
    for (const m of memberRows.rows as MemberRow[]) {
      let list = members.get(m.conversationId);
      if (!list) members.set(m.conversationId, (list = []));
      list.push({ userId: m.userId, lastReadSeq: m.lastReadSeq, user: { id: m.userId, name: m.name, isBot: m.isBot } });
    }
    return (listed.rows as ListRow[]).map((r) => ({
      row: {
        id: r.id,
        kind: r.kind,
        title: r.title,
        lastSeq: r.lastSeq,
        createdAt: r.createdAt,
        memberships: members.get(r.id) ?? [],
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
