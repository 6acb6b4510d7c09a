import { hiddenFrom, shownSql, toConversationDTO, toUnreadEntry, type ConversationRow } from "../contracts/dto.ts";
import type {
  ConversationDTO,
  ConversationPage,
  ListCursor,
  MessageDTO,
  Snapshot,
  UnreadEntry,
  UserDTO,
} from "../contracts/index.ts";
import pg from "pg";
import { poolOf, type Db } from "../db/prisma.ts";
import { ISO_MILLIS, isRealTime } from "../contracts/inputs.ts";
import { AppError } from "../errors.ts";
import type { SyncReadOrder } from "../metrics/metrics.ts";
import { NO_UNREAD, type UnreadCounts, type UnreadService } from "./unread.service.ts";

export type SnapshotService = ReturnType<typeof createSnapshotService>;

/** A conversation with its newest message's columns (null for none), as the list's first statement answers it. */
type ListRow = Omit<ConversationRow, "memberships"> & {
  lastId: number | null;
  lastSenderId: number | null;
  lastSenderName: string | null;
  lastContent: string | null;
  lastCreatedAt: string | null;
  lastClientMsgId: string | null;
  lastDeleted: boolean | null;
};

/** A membership of a listed conversation, as the list's second statement answers it. */
interface MemberRow {
  conversationId: number;
  userId: number;
  lastReadSeq: number;
  hidden: boolean;
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

/**
 * A time a client sent (ListCursor.at, already checked against ISO_MILLIS) as a `timestamp(3)` literal for a
 * statement's text: only digits and the fixed separators ever get there.
 */
export function sqlTimestamp(iso: string): string {
  if (!ISO_MILLIS.test(iso) || !isRealTime(iso)) throw new TypeError(`not an ISO time: ${iso}`);
  return `'${iso.slice(0, 10)} ${iso.slice(11, 23)}'::timestamp(3)`;
}

/** pg's parsers, but a `timestamp` stays the text a client gets (isoOfTimestamp). */
const LIST_TYPES = new pg.TypeOverrides();
LIST_TYPES.setTypeParser(pg.types.builtins.TIMESTAMP, isoOfTimestamp);

/** The list's row of a conversation with its newest message: `FROM` a set of wanted ids, then LISTED_JOINS. */
const LISTED = `SELECT c."id", c."kind"::TEXT AS "kind", c."title", c."lastSeq", c."createdAt", c."createdById",
        m."id" AS "lastId", m."senderId" AS "lastSenderId", s."name" AS "lastSenderName", m."content" AS "lastContent",
        m."createdAt" AS "lastCreatedAt", m."clientMsgId" AS "lastClientMsgId", m."deletedAt" IS NOT NULL AS "lastDeleted"`;
const LISTED_JOINS = `JOIN "Conversation" c ON c."id" = wanted."id"
        LEFT JOIN "Message" m ON m."conversationId" = c."id" AND m."seq" = c."lastSeq"
        LEFT JOIN "User" s ON s."id" = m."senderId"
        ORDER BY c."lastActivityAt" DESC, c."id" DESC`;

/** The memberships of the `wanted` conversations (a subquery of ids), then the users they name, each once. */
function members(wanted: string): string {
  return `SELECT mb."conversationId", mb."userId", mb."lastReadSeq", mb."hidden"
      FROM (${wanted}) wanted
      JOIN "Membership" mb ON mb."conversationId" = wanted."id"
      ORDER BY mb."conversationId", mb."userId";
      SELECT u."id", u."name", u."isBot" FROM "User" u
      WHERE u."id" IN (SELECT mb."userId" FROM (${wanted}) wanted JOIN "Membership" mb ON mb."conversationId" = wanted."id")`;
}

/** A multi-statement query's results, checked: one per statement, each answering the command its statement is. */
function selects<const T extends readonly string[]>(results: unknown, commands: T): { [K in keyof T]: pg.QueryResult } {
  const list = Array.isArray(results) ? (results as pg.QueryResult[]) : [results as pg.QueryResult];
  if (list.length !== commands.length || list.some((r, i) => r?.command !== commands[i])) {
    const got = list.map((r) => r?.command).join(", ");
    throw new Error(`the conversation list's query answered ${got}, not ${commands.join(", ")}`);
  }
  return list as { [K in keyof T]: pg.QueryResult };
}

/** The listed rows with their members (every row of a user sharing one UserDTO) and newest messages. */
function assemble(listed: pg.QueryResult, memberRows: pg.QueryResult, userRows: pg.QueryResult): Listing["entries"] {
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
    list.push({ userId: m.userId, lastReadSeq: m.lastReadSeq, hidden: m.hidden, user });
  }
  return (listed.rows as ListRow[]).map((r) => ({
    row: {
      id: r.id,
      kind: r.kind,
      title: r.title,
      lastSeq: r.lastSeq,
      createdAt: r.createdAt,
      createdById: r.createdById,
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
            ...(r.lastDeleted ? { deleted: true as const } : {}),
          },
  }));
}

/**
 * Which conversations to list: a user's as that user sees them (all, or a page of `limit` after `before`; with
 * `memberOf`, the ids of all of them too), or one.
 */
type ListWhere =
  { memberId: number; limit?: number; before?: ListCursor; memberOf?: boolean } | { conversationId: number };

/**
 * The listed conversations in the list's order; `more`: a page that others follow. For a user's list: `memberOf`,
 * every conversation they are a member of (asked for with a page; the whole list's rows otherwise), and `shown`, those
 * their list shows (not the ones `hiddenFrom` them).
 */
interface Listing {
  entries: { row: ConversationRow; last: MessageDTO | null }[];
  more: boolean;
  memberOf: Set<number> | null;
  shown: Set<number> | null;
}

/**
 * Not `hiddenFrom` the viewer, as a condition on their `Membership` row `w` and its `Conversation` row `c` for a
 * page's statements (the whole list applies `hiddenFrom` in Node, where it has the hidden rows' ids too).
 */
const SHOWN = shownSql("w", `c."lastSeq"`);

/** What a tab syncs from: the user's conversations with their unread counts, whole or one at a time. */
export function createSnapshotService({
  db,
  unread,
  onRead,
}: {
  db: Db;
  unread: UnreadService;
  /** Told how each snapshot read Redis and the database (the metrics count them). */
  onRead?: (order: SyncReadOrder) => void;
}) {
  const pool = poolOf(db);
  /**
   * Conversations with their members (names, cursors) and their message at lastSeq: the user's whole list
   * (`memberId`) or a page of it, newest activity first, or one conversation. Three plain statements: the
   * conversations with their newest messages, their memberships (each a walk of indexes), and the users those
   * memberships name, each once (one grouping of all of them); Node groups the memberships and gives every row of a
   * user the same object. The first two replaced one statement that aggregated each conversation's members (a
   * LATERAL of three index scans per conversation: 58–70 ms for a user in 5000 conversations, against 16–26 ms for
   * the two then, docs/benchmarks.md, "A tenth look"). None joins an aggregate per conversation, so stale statistics
   * (a user's memberships arriving in bulk) cannot make a plan rebuild one per conversation (2000 groups once took
   * 4.5 s that way). They read one snapshot (REPEATABLE READ), so every listed conversation has the members it had
   * at that instant: the whole list or one conversation in one round trip (the simple query protocol, one implicit
   * transaction), a page in two (its conversations are sorted out of all of the user's once, then named by id). An
   * error rolls the transaction back, and the pool closes the connection it failed on.
   *
   * What the instance does per row is most of a big user's sync (docs/benchmarks.md, "An eleventh look"), so it does
   * less of it: timestamps stay text (isoOfTimestamp), the database orders the list, and names each member once,
   * not once per conversation.
   */
  async function conversations(where: ListWhere): Promise<Listing> {
    if ("memberId" in where && where.limit !== undefined) return listPage(where.memberId, where.limit, where);
    const wanted =
      "memberId" in where
        ? `SELECT "conversationId" AS "id" FROM "Membership" WHERE "userId" = ${sqlId(where.memberId)}`
        : `SELECT ${sqlId(where.conversationId)}::int AS "id"`;
    const results = await pool.query({
      types: LIST_TYPES,
      text: `
      SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;
      ${LISTED} FROM (${wanted}) wanted ${LISTED_JOINS};
      ${members(wanted)}`,
    });
    // One result per statement, in order: the SET's, the conversations', the memberships', the users'.
    const [, listed, memberRows, userRows] = selects(results, ["SET", "SELECT", "SELECT", "SELECT"]);
    const entries = assemble(listed, memberRows, userRows);
    if (!("memberId" in where)) return { entries, more: false, memberOf: null, shown: null };
    const shown = entries.filter(({ row }) => !hiddenFrom(row, where.memberId));
    return {
      entries: shown,
      more: false,
      memberOf: new Set(entries.map(({ row }) => row.id)),
      shown: new Set(shown.map(({ row }) => row.id)),
    };
  }

  /**
   * A page of `limit` conversations the user sees after `before` (from the start without), and with `memberOf` the ids
   * of all of theirs and of those they see. Newest activity first, ties by the higher id: the list's order, which a
   * page continues from its cursor. The activity is on the conversation's row, so the page is one sort of the user's conversations (not a
   * look-up of each one's newest message first), done once: the second round trip names the page's ids.
   */
  async function listPage(
    memberId: number,
    limit: number,
    { before, memberOf }: { before?: ListCursor; memberOf?: boolean },
  ): Promise<Listing> {
    const after = before ? `AND (c."lastActivityAt", c."id") < (${sqlTimestamp(before.at)}, ${sqlId(before.id)})` : "";
    const client = await pool.connect();
    let listed: pg.QueryResult;
    let more: boolean;
    let second: unknown;
    try {
      // One more than the page, to know whether another follows it.
      const first = await client.query({
        types: LIST_TYPES,
        text: `
        BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY;
        ${LISTED} FROM (
          SELECT c."id" FROM "Membership" w JOIN "Conversation" c ON c."id" = w."conversationId"
          WHERE w."userId" = ${sqlId(memberId)} AND ${SHOWN} ${after}
          ORDER BY c."lastActivityAt" DESC, c."id" DESC LIMIT ${sqlId(limit + 1)}
        ) wanted ${LISTED_JOINS}`,
      });
      [, listed] = selects(first, ["BEGIN", "SELECT"]);
      more = listed.rows.length > limit;
      if (more) listed.rows.length = limit;
      const ids = (listed.rows as ListRow[]).map((r) => sqlId(r.id));
      const wanted = `SELECT unnest('{${ids.join(",")}}'::int[]) AS "id"`;
      const ofUser = memberOf
        ? `;
        SELECT array_agg(c."id") AS "ids", array_agg(c."id") FILTER (WHERE ${SHOWN}) AS "shown"
        FROM "Membership" w JOIN "Conversation" c ON c."id" = w."conversationId" WHERE w."userId" = ${sqlId(memberId)}`
        : "";
      second = await client.query({ types: LIST_TYPES, text: `${members(wanted)}${ofUser}; COMMIT` });
    } catch (err) {
      // Not back to the pool in the middle of a transaction: the connection is closed, which rolls it back.
      client.release(err instanceof Error ? err : new Error(String(err)));
      throw err;
    }
    client.release();
    const [memberRows, userRows, idRows] = selects(
      second,
      memberOf ? ["SELECT", "SELECT", "SELECT", "COMMIT"] : ["SELECT", "SELECT", "COMMIT"],
    );
    const ids = memberOf ? (idRows.rows[0] as { ids: number[] | null; shown: number[] | null }) : null;
    return {
      entries: assemble(listed, memberRows, userRows),
      more,
      memberOf: ids === null ? null : new Set(ids.ids ?? []),
      shown: ids === null ? null : new Set(ids.shown ?? []),
    };
  }

  /**
   * The conversation list (whole, or its first `limit` rows) with every unread count, total, version and epoch.
   * Counts and total come from one atomic read, so they always agree with each other, and every count belongs to a
   * conversation of the user (`conversationIds`).
   *
   * The database must not be read before the counts are: a conversation created in between would have a count and
   * no row. Read one after the other, a big user's sync waits for Redis' half (8 ms for 5000 conversations, most of
   * it the instance parsing the records) before the database's. So it first reads both side by side, after the
   * state's epoch and version (one HMGET), and keeps that answer only if the counts carry the same epoch and version:
   * no conversation enters or leaves a snapshot's counts, and no count grows, without moving one of them (the
   * scripts' rule), so every count it holds was in Redis before the database was read, which is all the order gave. Anything else (a change in
   * between, a rebuild, a count the list does not have) reads the database again, after those counts: the
   * sequential read.
   */
  async function snapshot(user: UserDTO, options: { limit?: number } = {}): Promise<Snapshot> {
    const paged = options.limit !== undefined;
    const list = () => conversations({ memberId: user.id, limit: options.limit, memberOf: paged });
    const stamp = await unread.stamp(user.id);
    let read: UnreadCounts | null = null;
    if (stamp) {
      const [counts, listing] = await Promise.all([unread.snapshot(user.id), list()]);
      if (counts.epoch === stamp.epoch && counts.version === stamp.version) {
        const answer = answerOf(user, counts, listing);
        if (answer.snapshot) {
          onRead?.("side_by_side");
          return answer.snapshot;
        }
      }
      // These counts were read before any database read that starts now: the sequential order's first half.
      read = counts;
    }
    onRead?.("sequential");
    // Redis first, then the database: a conversation created in between has no count yet, so every count
    // belongs to a conversation of the user, unless the user left it and Redis has not heard yet.
    for (let attempt = 0; ; attempt++) {
      const counts = read ?? (await unread.snapshot(user.id));
      read = null;
      const { snapshot, orphans } = answerOf(user, counts, await list());
      if (snapshot) return snapshot;
      // Their counts are in the totals and they are not in the list: answering would show a badge its rows do
      // not add up to. Fail the sync instead (the tab retries) if removing them does not take.
      if (attempt >= 3)
        throw new Error(
          `user ${user.id}: Redis still counts conversations ${orphans.join(", ")} the database no longer lists`,
        );
      // The removal committed but its Redis step has not run (or failed): run it now; it is idempotent.
      for (const conversationId of orphans) await unread.remove(user.id, conversationId);
    }
  }

  /** A snapshot of `counts` and `listing`, or the counted conversations the listing says the user is not in. */
  function answerOf(
    user: UserDTO,
    counts: UnreadCounts,
    { entries: rows, more, memberOf, shown }: Listing,
  ): { snapshot: Snapshot; orphans?: never } | { snapshot?: never; orphans: number[] } {
    // A conversation hidden from the user still counts as theirs here: its counts are not orphans.
    const listed = memberOf ?? new Set(rows.map((r) => r.row.id));
    const orphans = [...counts.counts.keys()].filter((id) => !listed.has(id));
    if (orphans.length > 0) return { orphans };
    // Newest activity first, as the database ordered them.
    const list = rows.map(({ row, last }) =>
      toConversationDTO(row, user.id, counts.counts.get(row.id) ?? NO_UNREAD, last),
    );
    const entries: UnreadEntry[] = [];
    for (const [id, state] of counts.counts) entries.push(toUnreadEntry(id, state));
    return {
      snapshot: {
        conversations: list,
        more,
        conversationIds: [...(shown ?? listed)],
        unread: entries,
        totalUnread: counts.totalUnread,
        totalMentions: counts.totalMentions,
        version: counts.version,
        epoch: counts.epoch,
      },
    };
  }

  /**
   * One conversation as each of `viewerIds` sees it (for `conversation:created` and `conversation:updated`, sent to
   * every member), in their order: the conversation read once, each viewer's counts from one apply.lua call, not
   * their whole snapshot.
   */
  async function describeFor(conversationId: number, viewerIds: number[]): Promise<ConversationDTO[]> {
    const [
      {
        entries: [found],
      },
      counts,
    ] = await Promise.all([
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

  /**
   * The page of `user`'s list after `before`, each row with its counts from one apply.lua call that moves nothing
   * (as `describeFor`): O(page), where a sync reads every count of the user.
   */
  async function page(user: UserDTO, before: ListCursor, limit: number): Promise<ConversationPage> {
    const { entries, more } = await conversations({ memberId: user.id, before, limit });
    // The first alone: when Redis lost the user's state it rebuilds it, once, before the others read it.
    const [head, ...rest] = entries;
    const counts = head ? [await unread.view(user.id, head.row.id)] : [];
    counts.push(...(await Promise.all(rest.map(({ row }) => unread.view(user.id, row.id)))));
    return {
      conversations: entries.map(({ row, last }, i) => toConversationDTO(row, user.id, counts[i]!, last)),
      more,
    };
  }

  return { snapshot, page, describe, describeFor };
}
