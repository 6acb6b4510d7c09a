import { hiddenFrom, messageInclude, toMessageDTO } from "../contracts/dto.ts";
import type { HistoryQuery, MemberAdded, MemberLeft, MessageDTO, SendInput, UserDTO } from "../contracts/index.ts";
import { mentionedUserIds, parseMentions } from "../contracts/mentions.ts";
import { groupCommit } from "../db/group-commit.ts";
import { isUniqueViolation } from "../db/unique.ts";
import { poolOf, type Db } from "../db/prisma.ts";
import { AppError } from "../errors.ts";
import type { Outbox } from "../outbox/outbox.ts";

export type MessageService = ReturnType<typeof createMessageService>;

/** A stored message with what its fan-out needs; outboxId null for a retried send (completed by content). */
export interface Sent {
  message: MessageDTO;
  memberIds: number[];
  mentionedIds: number[];
  outboxId: number | null;
  /**
   * The members added after the group began, each with the seq they joined at (Membership.joinedSeq): nothing up to
   * it counts as unread for them, so their counter events carry it as their read cursor. Empty for most.
   */
  floors: ReadonlyMap<number, number>;
}

/** Members added to a group after it began → the seq each joined at, from the two arrays the store answers. */
export function floorsOf(
  userIds: readonly number[] | null | undefined,
  seqs: readonly number[] | null | undefined,
): ReadonlyMap<number, number> {
  if (!userIds || !seqs || userIds.length === 0) return NO_FLOORS;
  return new Map(userIds.map((userId, i) => [userId, seqs[i]!]));
}
const NO_FLOORS: ReadonlyMap<number, number> = new Map();

/**
 * PostgreSQL errors one send of a group can cause (a concurrent retry's unique key, text PostgreSQL refuses, a
 * deadlock with a statement outside the groups): the group is then stored one send at a time.
 */
const SINGLE_SEND_ERRORS = new Set(["23505", "22021", "22P05", "40P01"]);

/**
 * Sends an instance lets wait for a group at most (two seconds of its rate at 2000/s). While the database stalls,
 * the next send is refused at once with `unavailable` (the client keeps the message and tries again after a
 * backoff) rather than every retry piling up in memory behind the stall.
 */
const MAX_QUEUED_SENDS = 4096;

/**
 * How long a group may be in flight before the next goes out beside it: a few times a durable call's usual p99 on a
 * quiet host (3.6–5 ms at 1000 sends/s), so it rarely opens in the steady state; a row lock wait lasts longer.
 */
const SPILL_AFTER_MS = 10;

export function createMessageService({
  db,
  outbox,
  maxQueuedSends = MAX_QUEUED_SENDS,
  onGroup,
  chargeMentions,
}: {
  db: Db;
  /**
   * Charges the sender for the people a message mentions (the `mention` limit), before it is stored: a refusal (it
   * throws) stores nothing, neither the message nor its mentions.
   */
  chargeMentions?: (sender: UserDTO, mentioned: number) => Promise<void>;
  outbox?: Pick<Outbox, "take" | "completeSoon">;
  /** Sends that may wait for a group (tests make it small). */
  maxQueuedSends?: number;
  /**
   * Hears how many sends each statement of the group path carried, once it succeeded (the /metrics histogram
   * `tally_send_group_size`); a group that failed as a whole is not counted, its sends stored one by one are.
   */
  onGroup?: (sends: number) => void;
}) {
  const pool = poolOf(db);
  /**
   * Members only, and not of a direct conversation hidden from them (`hiddenFrom`: no conversation of theirs yet);
   * anyone else (or a conversation that does not exist) gets the same `forbidden`.
   */
  async function assertMember(userId: number, conversationId: number): Promise<void> {
    const membership = await db.membership.findFirst({
      where: { userId, conversationId, NOT: { hidden: true, conversation: { lastSeq: 0 } } },
      select: { userId: true },
    });
    if (!membership) throw new AppError("forbidden", "You are not a member of this conversation.");
  }

  async function findBySender(senderId: number, clientMsgId: string): Promise<MessageDTO | null> {
    const m = await db.message.findUnique({
      where: { senderId_clientMsgId: { senderId, clientMsgId } },
      include: messageInclude,
    });
    return m ? toMessageDTO(m) : null;
  }

  function sameSend(existing: MessageDTO, input: SendInput): MessageDTO {
    if (existing.conversationId !== input.conversationId) {
      throw new AppError("invalid", "This clientMsgId was already used for another conversation.");
    }
    return existing;
  }

  async function membersOf(
    conversationId: number,
  ): Promise<{ memberIds: number[]; floors: ReadonlyMap<number, number> }> {
    const rows = await db.membership.findMany({
      where: { conversationId },
      select: { userId: true, joinedSeq: true },
      orderBy: { userId: "asc" },
    });
    return {
      memberIds: rows.map((m) => m.userId),
      floors: new Map(rows.filter((m) => m.joinedSeq > 0).map((m) => [m.userId, m.joinedSeq])),
    };
  }

  async function mentionsOf(conversationId: number, seq: number): Promise<number[]> {
    const rows = await db.mention.findMany({ where: { conversationId, seq }, select: { userId: true } });
    return rows.map((m) => m.userId).sort((a, b) => a - b);
  }

  interface StoredRow {
    status: "stored" | "duplicate" | "forbidden" | "blocked" | "blocking";
    id: number;
    seq: number;
    createdAt: Date | string;
    kind: "direct" | "group";
    /** The conversation's members, ascending. */
    members: number[];
    /** The members added after the group began, and the seq each joined at (same order); null when none. */
    joined: number[] | null;
    joinedSeqs: number[] | null;
    outboxId: number;
  }

  /** `tally_store_messages`' answer for one message, in the order given. */
  const STORE_MESSAGES = `
    SELECT r_status AS "status", r_id AS "id", r_seq AS "seq", r_created_at AT TIME ZONE 'UTC' AS "createdAt",
      r_kind AS "kind", r_outbox_id AS "outboxId", r_members AS "members",
      r_joined AS "joined", r_joined_seqs AS "joinedSeqs"
    FROM tally_store_messages($1::int[], $2::int[], $3::text[], $4::text[], $5::int[])
    ORDER BY r_idx`;

  function sendArgs(items: { sender: UserDTO; input: SendInput }[], completed: number[]) {
    return [
      items.map((m) => m.input.conversationId),
      items.map((m) => m.sender.id),
      items.map((m) => m.input.clientMsgId),
      items.map((m) => m.input.content),
      completed,
    ];
  }

  /**
   * Stores messages with one call of `tally_store_messages` (first 20261125200000_store_messages, as it is now
   * prisma/migrations/20261211000000_group_adds): for each, in the order given, membership checked, the next seq (the
   * conversation's row lock orders concurrent sends), the message, the sender's read cursor moved to it and an outbox
   * entry for the counters, answered with the members' ids, the floors of those added later and the conversation's
   * kind (which the mention rule needs); or `duplicate` / `forbidden` / `blocked` / `blocking` with nothing written.
   * Outside a transaction it runs as a named prepared statement on the pool under Prisma (planned once per
   * connection, none of Prisma's per-query work: the send path's hottest statement), and also deletes the outbox
   * entries completed since the last group (outbox.take): given back if the statement fails.
   */
  async function storeMessages(
    items: { sender: UserDTO; input: SendInput }[],
    tx?: Pick<Db, "$queryRawUnsafe">,
  ): Promise<StoredRow[]> {
    if (tx) return tx.$queryRawUnsafe<StoredRow[]>(STORE_MESSAGES, ...sendArgs(items, []));
    const completed = outbox?.take() ?? [];
    try {
      const values = sendArgs(items, completed);
      return (await pool.query<StoredRow>({ name: "tally_store_messages", text: STORE_MESSAGES, values })).rows;
    } catch (err) {
      if (completed.length > 0) outbox?.completeSoon(completed);
      throw err;
    }
  }

  /** A send's answer from its row of `tally_store_messages` (none: the function answered fewer rows than sends). */
  function outcome(row: StoredRow | undefined): PromiseSettledResult<StoredRow> {
    return row
      ? { status: "fulfilled", value: row }
      : { status: "rejected", reason: new Error("tally_store_messages answered fewer rows than it was given sends") };
  }

  /**
   * Sends without mentions (most of them) are stored in groups (db/group-commit.ts): those that arrive while
   * earlier groups are in the database share one statement, one transaction and one WAL flush. Sorted by
   * conversation, so two instances' groups lock conversations in one order. If the group fails as a whole (a
   * concurrent send with the same clientMsgId), each message is stored again on its own and answers for itself.
   * One group in flight while it is quick: the sends that arrive meanwhile wait for it and go out together (larger
   * groups: fewer statements, round trips and flushes per send). A second goes out beside it only once it has been
   * out for SPILL_AFTER_MS, so a statement stuck on a conversation's row lock holds the instance's sends no longer
   * than that, unless the second group is stuck too (docs/benchmarks.md, "A seventh look").
   */
  const storeGrouped = groupCommit<{ sender: UserDTO; input: SendInput }, StoredRow>(
    async (items) => {
      const order = [...items.keys()].sort(
        (a, b) => items[a]!.input.conversationId - items[b]!.input.conversationId || a - b,
      );
      const settled = new Array<PromiseSettledResult<StoredRow>>(items.length);
      let rows: StoredRow[];
      try {
        rows = await storeMessages(order.map((i) => items[i]!));
      } catch (err) {
        // Only an error one send can cause is worth storing each alone; a database away fails the group at once.
        if (items.length === 1 || !SINGLE_SEND_ERRORS.has((err as { code?: unknown }).code as string)) throw err;
        // One after another in the same order, so call order stays seq order within a conversation.
        for (const i of order) {
          let row: StoredRow | undefined;
          try {
            [row] = await storeMessages([items[i]!]);
          } catch (reason) {
            settled[i] = { status: "rejected", reason };
            continue;
          }
          onGroup?.(1);
          settled[i] = outcome(row);
        }
        return settled;
      }
      onGroup?.(items.length);
      order.forEach((i, at) => {
        settled[i] = outcome(rows[at]);
      });
      return settled;
    },
    {
      maxInFlight: 2,
      spillAfterMs: SPILL_AFTER_MS,
      maxBatch: 64,
      maxQueued: maxQueuedSends,
      full: () => new AppError("unavailable", "The server is busy; try again."),
    },
  );

  /**
   * Charges the sender for the people the content mentions among the conversation's members as read now (the
   * `mention` limit), before the transaction that stores it: a refusal stores nothing, and no row lock of that
   * transaction waits on Redis. A non-member is not charged (the store refuses them), nor a member whom the
   * conversation is hidden from (`hiddenFrom`: refused alike), nor a retry of a message
   * already stored (it mentions nobody anew). Two attempts of one message racing may both be charged: the limit's
   * window forgives it.
   */
  async function chargeMentionsOf(sender: UserDTO, input: SendInput): Promise<void> {
    if (!chargeMentions) return;
    const { conversationId, clientMsgId, content } = input;
    const [conversation, stored] = await Promise.all([
      db.conversation.findUnique({
        where: { id: conversationId },
        select: {
          kind: true,
          lastSeq: true,
          memberships: { select: { hidden: true, user: { select: { id: true, name: true } } } },
        },
      }),
      db.message.findUnique({
        where: { senderId_clientMsgId: { senderId: sender.id, clientMsgId } },
        select: { id: true },
      }),
    ]);
    const members = conversation?.memberships.map((m) => m.user) ?? [];
    if (stored || !conversation || !members.some((m) => m.id === sender.id)) return;
    // Nor one whom the conversation is hidden from (the store refuses them as a non-member): charged, they could
    // tell it from an id that does not exist by the limit's answer.
    const viewer = {
      lastSeq: conversation.lastSeq,
      memberships: conversation.memberships.map((m) => ({ userId: m.user.id, hidden: m.hidden })),
    };
    if (hiddenFrom(viewer, sender.id)) return;
    const mentioned = mentionedUserIds(content, members, sender.id, conversation.kind).length;
    if (mentioned > 0) await chargeMentions(sender, mentioned);
  }

  /**
   * Stores a message durably with its mentions. Content without an `@` token (most messages) is stored in a group
   * with the sends around it (one statement and one implicit transaction for the group). Content with one is stored
   * alone, with the Mention rows (resolved against the members it read, by the shared rule in contracts/mentions.ts)
   * in one transaction, so a message is never stored without its mentions. A retry with the same (sender,
   * clientMsgId) writes nothing and returns the original with the mentions it was stored with (also when the two
   * attempts race: the unique key then refuses the second).
   */
  async function send(sender: UserDTO, input: SendInput): Promise<Sent> {
    const { conversationId, clientMsgId, content } = input;
    const tokens = parseMentions(content);
    const mayMention = tokens.all || tokens.names.length > 0;
    if (mayMention) await chargeMentionsOf(sender, input);
    try {
      const { row, mentionedIds } = await (mayMention
        ? db.$transaction(async (tx) => {
            const [row] = await storeMessages([{ sender, input }], tx);
            if (row?.status !== "stored") return { row, mentionedIds: [] };
            const members = await tx.user.findMany({
              where: { id: { in: row.members } },
              select: { id: true, name: true },
            });
            const ids = mentionedUserIds(content, members, sender.id, row.kind);
            if (ids.length > 0) {
              await tx.$executeRaw`
                INSERT INTO "Mention" ("userId", "conversationId", "seq")
                SELECT unnest(${ids}::int[]), ${conversationId}, ${row.seq}`;
            }
            return { row, mentionedIds: ids };
          })
        : storeGrouped({ sender, input }).then((row) => ({ row, mentionedIds: [] as number[] })));
      const resent = row?.status === "duplicate" ? await resend(sender, input) : null;
      if (resent) return resent;
      if (row?.status !== "stored") throw refusal(row?.status);
      const message: MessageDTO = {
        id: row.id,
        conversationId,
        seq: row.seq,
        senderId: sender.id,
        senderName: sender.name,
        content,
        createdAt: new Date(row.createdAt).toISOString(),
        clientMsgId,
      };
      return {
        message,
        memberIds: row.members,
        mentionedIds,
        outboxId: row.outboxId,
        floors: floorsOf(row.joined, row.joinedSeqs),
      };
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      const resent = await resend(sender, input);
      if (!resent) throw err;
      return resent;
    }
  }

  /** Why `tally_store_messages` stored nothing: not a member, or a block between the two of a direct conversation. */
  function refusal(status: StoredRow["status"] | undefined): AppError {
    if (status === "blocking")
      return new AppError("forbidden", "You blocked this person; unblock them to write to them again.");
    // Not "blocked": who blocked whom is the blocker's to know.
    if (status === "blocked") return new AppError("forbidden", "You cannot write in this conversation.");
    return new AppError("forbidden", "You are not a member of this conversation.");
  }

  /** A retried send (its clientMsgId is stored already): the original, with the members and mentions it has. */
  async function resend(sender: UserDTO, input: SendInput): Promise<Sent | null> {
    const original = await findBySender(sender.id, input.clientMsgId);
    if (!original) return null;
    await assertMember(sender.id, input.conversationId);
    const message = sameSend(original, input);
    const [{ memberIds, floors }, mentioned] = await Promise.all([
      membersOf(input.conversationId),
      mentionsOf(input.conversationId, message.seq),
    ]);
    // The first attempt's entry id is not known here: deliver completes it by content.
    return { message, memberIds, mentionedIds: mentioned, outboxId: null, floors };
  }

  /** A page of history, ascending by seq: the newest `limit` before `before`, or the oldest after `after`. */
  async function history(reader: UserDTO, conversationId: number, page: HistoryQuery): Promise<MessageDTO[]> {
    await assertMember(reader.id, conversationId);
    if (page.after !== undefined) {
      const rows = await db.message.findMany({
        where: { conversationId, seq: { gt: page.after } },
        orderBy: { seq: "asc" },
        take: page.limit,
        include: messageInclude,
      });
      return rows.map(toMessageDTO);
    }
    const rows = await db.message.findMany({
      where: { conversationId, ...(page.before !== undefined ? { seq: { lt: page.before } } : {}) },
      orderBy: { seq: "desc" },
      take: page.limit,
      include: messageInclude,
    });
    return rows.reverse().map(toMessageDTO);
  }

  /** The group's members who left it or were removed, oldest first; call after `history` (which checks the reader is a member). */
  async function left(conversationId: number): Promise<MemberLeft[]> {
    const rows = await db.groupLeave.findMany({
      where: { conversationId },
      orderBy: [{ at: "asc" }, { userId: "asc" }],
      select: {
        userId: true,
        at: true,
        user: { select: { name: true } },
        removedBy: { select: { id: true, name: true } },
      },
    });
    return rows.map((r) => ({
      userId: r.userId,
      name: r.user.name,
      ...(r.removedBy ? { removedBy: r.removedBy } : {}),
      at: r.at.toISOString(),
    }));
  }

  /** The people added to the group after it began (those who left since too), oldest first; as `left`. */
  async function added(conversationId: number): Promise<MemberAdded[]> {
    const rows = await db.groupJoin.findMany({
      where: { conversationId },
      orderBy: [{ seq: "asc" }, { at: "asc" }, { userId: "asc" }],
      select: {
        userId: true,
        seq: true,
        at: true,
        user: { select: { name: true } },
        addedBy: { select: { id: true, name: true } },
      },
    });
    return rows.map((r) => ({
      userId: r.userId,
      name: r.user.name,
      by: r.addedBy,
      seq: r.seq,
      at: r.at.toISOString(),
    }));
  }

  /** `waiting()`: sends waiting for a group now (the /metrics gauge; past the bound a send is refused). */
  return { send, history, left, added, waiting: storeGrouped.waiting };
}
