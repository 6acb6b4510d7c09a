import { messageInclude, toMessageDTO } from "../contracts/dto.ts";
import type { HistoryQuery, MessageDTO, SendInput, UserDTO } from "../contracts/index.ts";
import { mentionedUserIds, parseMentions } from "../contracts/mentions.ts";
import type { Db } from "../db/prisma.ts";
import { AppError } from "../errors.ts";

export type MessageService = ReturnType<typeof createMessageService>;

/** A unique-key violation, as Prisma reports it for model queries (P2002) or raw ones (PostgreSQL 23505). */
function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; message?: unknown; meta?: { code?: unknown }; cause?: unknown };
  if (e.code === "P2002" || e.code === "23505" || e.meta?.code === "23505") return true;
  if (typeof e.message === "string" && /23505|unique constraint/i.test(e.message)) return true;
  return e.cause !== undefined && e.cause !== err && isUniqueViolation(e.cause);
}

export function createMessageService({ db }: { db: Db }) {
  /** Members only; anyone else (or a conversation that does not exist) gets the same `forbidden`. */
  async function assertMember(userId: number, conversationId: number): Promise<void> {
    const membership = await db.membership.findUnique({
      where: { userId_conversationId: { userId, conversationId } },
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

  async function memberIds(conversationId: number): Promise<number[]> {
    const rows = await db.membership.findMany({ where: { conversationId }, select: { userId: true } });
    return rows.map((m) => m.userId);
  }

  async function mentionsOf(conversationId: number, seq: number): Promise<number[]> {
    const rows = await db.mention.findMany({ where: { conversationId, seq }, select: { userId: true } });
    return rows.map((m) => m.userId).sort((a, b) => a - b);
  }

  /**
   * The one statement that stores a message: it checks membership, takes the next seq (the row lock on the
   * conversation orders concurrent sends), inserts the message, moves the sender's read cursor to it, records an
   * outbox entry for the counters and reads the members (with their names and the conversation's kind, which
   * the mention rule needs).
   */
  function storeMessage(tx: Pick<Db, "$queryRaw">, sender: UserDTO, input: SendInput) {
    const { conversationId, clientMsgId, content } = input;
    return tx.$queryRaw<
      {
        id: number;
        seq: number;
        createdAt: Date | string;
        kind: "direct" | "group";
        members: { id: number; name: string }[];
        outboxId: number;
      }[]
    >`
      WITH conv AS (
        UPDATE "Conversation" SET "lastSeq" = "lastSeq" + 1
        WHERE "id" = ${conversationId}
          AND EXISTS (SELECT 1 FROM "Membership" WHERE "userId" = ${sender.id} AND "conversationId" = ${conversationId})
        RETURNING "lastSeq", "kind"::text AS "kind"
      ), msg AS (
        INSERT INTO "Message" ("conversationId", "seq", "senderId", "clientMsgId", "content")
        SELECT ${conversationId}, "lastSeq", ${sender.id}, ${clientMsgId}, ${content} FROM conv
        RETURNING "id", "seq", "createdAt"
      ), own_cursor AS (
        UPDATE "Membership" SET "lastReadSeq" = GREATEST("lastReadSeq", conv."lastSeq") FROM conv
        WHERE "userId" = ${sender.id} AND "conversationId" = ${conversationId}
      ), outbox AS (
        INSERT INTO "OutboxEvent" ("kind", "conversationId", "userId", "seq")
        SELECT 'message'::"OutboxKind", ${conversationId}, ${sender.id}, "lastSeq" FROM conv
        RETURNING "id"
      )
      SELECT msg."id", msg."seq", msg."createdAt", conv."kind", outbox."id" AS "outboxId",
        (SELECT COALESCE(json_agg(json_build_object('id', u."id", 'name', u."name")), '[]'::json)
         FROM "Membership" mb JOIN "User" u ON u."id" = mb."userId"
         WHERE mb."conversationId" = ${conversationId}) AS "members"
      FROM msg, conv, outbox`;
  }

  /**
   * Stores a message durably with its mentions. Content without an `@` token (most messages) takes one statement,
   * so one round trip and one implicit transaction. Content with one runs that statement and the Mention rows
   * (resolved against the members it read, by the shared rule in contracts/mentions.ts) in one transaction, so a
   * message is never stored without its mentions. A retry with the same (sender, clientMsgId) violates the unique
   * key, rolls back whole, changes nothing, and returns the original with the mentions it was stored with.
   */
  async function send(
    sender: UserDTO,
    input: SendInput,
  ): Promise<{ message: MessageDTO; memberIds: number[]; mentionedIds: number[]; outboxId: number | null }> {
    const { conversationId, clientMsgId, content } = input;
    const tokens = parseMentions(content);
    const mayMention = tokens.all || tokens.names.length > 0;
    try {
      const { row, mentionedIds } = await (mayMention
        ? db.$transaction(async (tx) => {
            const [row] = await storeMessage(tx, sender, input);
            if (!row) return { row, mentionedIds: [] };
            const ids = mentionedUserIds(content, row.members, sender.id, row.kind);
            if (ids.length > 0) {
              await tx.$executeRaw`
                INSERT INTO "Mention" ("userId", "conversationId", "seq")
                SELECT unnest(${ids}::int[]), ${conversationId}, ${row.seq}`;
            }
            return { row, mentionedIds: ids };
          })
        : storeMessage(db, sender, input).then(([row]) => ({ row, mentionedIds: [] as number[] })));
      if (!row) throw new AppError("forbidden", "You are not a member of this conversation.");
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
      return { message, memberIds: row.members.map((m) => Number(m.id)), mentionedIds, outboxId: row.outboxId };
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      const original = await findBySender(sender.id, clientMsgId);
      if (!original) throw err;
      await assertMember(sender.id, conversationId);
      const message = sameSend(original, input);
      const [members, mentioned] = await Promise.all([
        memberIds(conversationId),
        mentionsOf(conversationId, message.seq),
      ]);
      // The first attempt's entry id is not known here: deliver completes it by content.
      return { message, memberIds: members, mentionedIds: mentioned, outboxId: null };
    }
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

  return { send, history };
}
