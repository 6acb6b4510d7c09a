import type { MessageDTO, SendInput, UserDTO } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { toMessageDTO } from "../conversations/conversations.service.ts";
import { AppError } from "../errors.ts";

const withSender = { sender: { select: { name: true } } } as const;

export type MessageService = ReturnType<typeof createMessageService>;

function isUniqueViolation(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "P2002";
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
      include: withSender,
    });
    return m ? toMessageDTO(m) : null;
  }

  function sameSend(existing: MessageDTO, input: SendInput): MessageDTO {
    if (existing.conversationId !== input.conversationId) {
      throw new AppError("invalid", "This clientMsgId was already used for another conversation.");
    }
    return existing;
  }

  /**
   * Stores a message: one transaction takes the next seq (the row lock on the conversation orders
   * concurrent sends), inserts the message, moves the sender's read cursor to it and records an outbox entry
   * for the counters. A retry with the same (sender, clientMsgId) returns the original message and changes
   * nothing.
   */
  async function send(
    sender: UserDTO,
    input: SendInput,
  ): Promise<{ message: MessageDTO; memberIds: number[]; duplicate: boolean }> {
    await assertMember(sender.id, input.conversationId);
    const memberIds = async () =>
      (await db.membership.findMany({ where: { conversationId: input.conversationId }, select: { userId: true } })).map(
        (m) => m.userId,
      );

    const existing = await findBySender(sender.id, input.clientMsgId);
    if (existing) return { message: sameSend(existing, input), memberIds: await memberIds(), duplicate: true };

    try {
      const message = await db.$transaction(async (tx) => {
        const [row] = await tx.$queryRaw<{ lastSeq: number }[]>`
          UPDATE "Conversation" SET "lastSeq" = "lastSeq" + 1, "lastMessageAt" = now()
          WHERE "id" = ${input.conversationId} RETURNING "lastSeq"`;
        if (!row) throw new AppError("forbidden", "You are not a member of this conversation.");
        const created = await tx.message.create({
          data: {
            conversationId: input.conversationId,
            seq: row.lastSeq,
            senderId: sender.id,
            clientMsgId: input.clientMsgId,
            content: input.content,
          },
          include: withSender,
        });
        await tx.$executeRaw`
          UPDATE "Membership" SET "lastReadSeq" = GREATEST("lastReadSeq", ${row.lastSeq})
          WHERE "userId" = ${sender.id} AND "conversationId" = ${input.conversationId}`;
        await tx.outboxEvent.create({
          data: { kind: "message", conversationId: input.conversationId, userId: sender.id, seq: row.lastSeq },
        });
        return toMessageDTO(created);
      });
      return { message, memberIds: await memberIds(), duplicate: false };
    } catch (err) {
      // The same send raced itself (two tabs retrying): the unique (sender, clientMsgId) kept one.
      if (!isUniqueViolation(err)) throw err;
      const original = await findBySender(sender.id, input.clientMsgId);
      if (!original) throw err;
      return { message: sameSend(original, input), memberIds: await memberIds(), duplicate: true };
    }
  }

  /**
   * Moves the reader's cursor to max(cursor, seq) clamped to the conversation's lastSeq, durably, with an outbox
   * entry for the counters. Returns the cursor and the conversation's lastSeq (both true observations).
   */
  async function markRead(
    reader: UserDTO,
    conversationId: number,
    seq: number,
  ): Promise<{ cursor: number; lastSeq: number }> {
    return db.$transaction(async (tx) => {
      const [row] = await tx.$queryRaw<{ lastReadSeq: number; lastSeq: number }[]>`
        UPDATE "Membership" AS m SET "lastReadSeq" = GREATEST(m."lastReadSeq", LEAST(${seq}::int, c."lastSeq"))
        FROM "Conversation" AS c
        WHERE c."id" = m."conversationId" AND m."userId" = ${reader.id} AND m."conversationId" = ${conversationId}
        RETURNING m."lastReadSeq", c."lastSeq"`;
      if (!row) throw new AppError("forbidden", "You are not a member of this conversation.");
      await tx.outboxEvent.create({ data: { kind: "read", conversationId, userId: reader.id, seq: row.lastReadSeq } });
      return { cursor: row.lastReadSeq, lastSeq: row.lastSeq };
    });
  }

  /** A page of history, ascending by seq: the newest `limit` before `before`, or the oldest after `after`. */
  async function history(
    reader: UserDTO,
    conversationId: number,
    page: { before?: number; after?: number; limit: number },
  ): Promise<MessageDTO[]> {
    await assertMember(reader.id, conversationId);
    if (page.after !== undefined) {
      const rows = await db.message.findMany({
        where: { conversationId, seq: { gt: page.after } },
        orderBy: { seq: "asc" },
        take: page.limit,
        include: withSender,
      });
      return rows.map(toMessageDTO);
    }
    const rows = await db.message.findMany({
      where: { conversationId, ...(page.before !== undefined ? { seq: { lt: page.before } } : {}) },
      orderBy: { seq: "desc" },
      take: page.limit,
      include: withSender,
    });
    return rows.reverse().map(toMessageDTO);
  }

  return { send, markRead, history, assertMember };
}
