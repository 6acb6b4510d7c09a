import { toConversationDTO, type ConversationRow } from "../contracts/dto.ts";
import type { ConversationDTO, MessageDTO, Snapshot, UserDTO } from "../contracts/index.ts";
import pg from "pg";
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
  lastCreatedAt: string | null;
  lastClientMsgId: string | null;
};

/** A membership of a listed conversation, as the list's second statement answers it. */
interface MemberRow {
  conversationId: number;
  userId: number;
  lastReadSeq: number;
}

/** A member of a listed conversation, once however many conversations they share, as the third statement answers it. */
interface UserRow {
  id: number;
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

/**
 * pg's text of a `timestamp(3)` (UTC, as Prisma stores it) as `Date.prototype.toISOString` writes it: the text a
 * client gets, without the Date pg would parse it into (most of a big user's sync went to that and back). Any other
 * shape is refused, not guessed at.
 */
export function isoOfTimestamp(text: string): string {
  if (!TIMESTAMP_TEXT.test(text)) throw new Error(`not a timestamp(3) in ISO DateStyle: ${text}`);
  const ms = text.length === 19 ? "000" : text.slice(20).padEnd(3, "0");
  return `${text.slice(0, 10)}T${text.slice(11, 19)}.${ms}Z`;
}
const TIMESTAMP_TEXT = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,3})?$/;

/** pg's parsers, but a `timestamp` stays the text a client gets (isoOfTimestamp). */
const LIST_TYPES = new pg.TypeOverrides();
LIST_TYPES.setTypeParser(pg.types.builtins.TIMESTAMP, isoOfTimestamp);

/** What a tab syncs from: the user's conversations with their unread counts, whole or one at a time. */
export function createSnapshotService({ db, unread }: { db: Db; unread: UnreadService }) {
  const pool = poolOf(db);
  /**
   * Conversations with their members (names, cursors) and their message at lastSeq: the user's whole list
   * (`memberId`), newest activity first, or one conversation. Three plain statements from the wanted conversations:
   * the conversations with their newest messages and their memberships (each a walk of indexes), and the users those
   * memberships name, each once (one grouping of all of them); Node groups the memberships and gives every row of a
   * user the same object. The first two replaced one statement that aggregated each conversation's members (a
   * LATERAL of three index scans per conversation: 58–70 ms for a user in 5000 conversations, against 16–26 ms for
   * the two then, docs/benchmarks.md, "A tenth look"). None joins an aggregate per conversation, so stale statistics
   * (a user's memberships arriving in bulk) cannot make a plan rebuild one per conversation (2000 groups once took
   * 4.5 s that way). All go in one round trip (the simple query protocol) and one implicit transaction at REPEATABLE
   * READ: they read one snapshot, so every listed conversation has the members it had at that instant. An error
   * rolls the transaction back, and the pool closes the connection it failed on.
   *
   * What the instance does per row is most of a big user's sync (docs/benchmarks.md, "An eleventh look"), so it does
   * less of it: timestamps stay text (isoOfTimestamp), the database orders the list, and names each member once,
   * not once per conversation.
   */
  async function conversations(
    where: { memberId: number } | { conversationId: number },
  ): Promise<{ row: ConversationRow; last: MessageDTO | null }[]> {
    const wanted =
      "memberId" in where
        ? `SELECT "conversationId" AS "id" FROM "Membership" WHERE "userId" = ${sqlId(where.memberId)}`
        : `SELECT ${sqlId(where.conversationId)}::int AS "id"`;
    const results: unknown = await pool.query({
      types: LIST_TYPES,
      text: `
      SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;
      SELECT c."id", c."kind"::TEXT AS "kind", c."title", c."lastSeq", c."createdAt",
        m."id" AS "lastId", m."senderId" AS "lastSenderId", s."name" AS "lastSenderName", m."content" AS "lastContent",
        m."createdAt" AS "lastCreatedAt", m."clientMsgId" AS "lastClientMsgId"
      FROM (${wanted}) wanted
      JOIN "Conversation" c ON c."id" = wanted."id"
      LEFT JOIN "Message" m ON m."conversationId" = c."id" AND m."seq" = c."lastSeq"
      LEFT JOIN "User" s ON s."id" = m."senderId"
      ORDER BY COALESCE(m."createdAt", c."createdAt") DESC, c."id" DESC;
      SELECT mb."conversationId", mb."userId", mb."lastReadSeq"
      FROM (${wanted}) wanted
      JOIN "Membership" mb ON mb."conversationId" = wanted."id"
      ORDER BY mb."conversationId", mb."userId";
      SELECT u."id", u."name", u."isBot" FROM "User" u
      WHERE u."id" IN (SELECT mb."userId" FROM (${wanted}) wanted JOIN "Membership" mb ON mb."conversationId" = wanted."id")`,
    });
    // One result per statement, in order: the SET's, the conversations', the memberships', the users'.
    const [, listed, memberRows, userRows] = Array.isArray(results) ? (results as pg.QueryResult[]) : [];
    if (listed?.command !== "SELECT" || memberRows?.command !== "SELECT" || userRows?.command !== "SELECT") {
      throw new Error("the conversation list's query did not answer its three SELECTs");
    }
    const users = new Map<number, UserDTO>();
    for (const u of userRows.rows as UserRow[]) {
      users.set(u.id, u.isBot ? { id: u.id, name: u.name, bot: true } : { id: u.id, name: u.name });
    }
    const members = new Map<number, ConversationRow["memberships"]>();
    for (const m of memberRows.rows as MemberRow[]) {
      const user = users.get(m.userId);
      if (!user) throw new Error(`the conversation list's query named member ${m.userId} without their user`);
      let list = members.get(m.conversationId);
      if (!list) members.set(m.conversationId, (list = []));
      list.push({ userId: m.userId, lastReadSeq: m.lastReadSeq, user });
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
          : {
              id: r.lastId,
              conversationId: r.id,
              seq: r.lastSeq,
              senderId: r.lastSenderId!,
              senderName: r.lastSenderName!,
              content: r.lastContent!,
              createdAt: r.lastCreatedAt!,
              clientMsgId: r.lastClientMsgId!,
            },
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
      // Newest activity first, as the database ordered them.
      const list = rows.map(({ row, last }) =>
        toConversationDTO(row, user.id, counts.counts.get(row.id) ?? NO_UNREAD, last),
      );
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
