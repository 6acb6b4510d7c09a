import type { ConversationDTO, MessageDTO, Snapshot, UserDTO } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { AppError } from "../errors.ts";
import type { UnreadService } from "../unread/unread.service.ts";

const conversationInclude = {
  memberships: {
    select: { userId: true, lastReadSeq: true, user: { select: { id: true, name: true, isBot: true } } },
  },
} as const;

interface ConversationRow {
  id: number;
  kind: "direct" | "group";
  title: string | null;
  lastSeq: number;
  memberships: { userId: number; lastReadSeq: number; user: { id: number; name: string; isBot: boolean } }[];
}

interface MessageRow {
  id: number;
  conversationId: number;
  seq: number;
  senderId: number;
  content: string;
  createdAt: Date;
  clientMsgId: string;
  sender: { name: string };
}

export function toMessageDTO(m: MessageRow): MessageDTO {
  return {
    id: m.id,
    conversationId: m.conversationId,
    seq: m.seq,
    senderId: m.senderId,
    senderName: m.sender.name,
    content: m.content,
    createdAt: m.createdAt.toISOString(),
    clientMsgId: m.clientMsgId,
  };
}

/** A direct conversation is titled by the other member; an untitled group by its other members. */
function titleFor(row: ConversationRow, viewerId: number): string {
  if (row.kind === "group" && row.title) return row.title;
  const others = row.memberships.filter((m) => m.userId !== viewerId).map((m) => m.user.name);
  return others.length > 0 ? others.join(", ") : "Just you";
}

function toConversationDTO(
  row: ConversationRow,
  viewerId: number,
  unreadCount: number,
  lastMessage: MessageDTO | null,
): ConversationDTO {
  const me = row.memberships.find((m) => m.userId === viewerId);
  return {
    id: row.id,
    kind: row.kind,
    title: titleFor(row, viewerId),
    members: row.memberships
      .map(({ user }): UserDTO =>
        user.isBot ? { id: user.id, name: user.name, bot: true } : { id: user.id, name: user.name },
      )
      .sort((a, b) => a.id - b.id),
    lastSeq: row.lastSeq,
    lastReadSeq: me?.lastReadSeq ?? 0,
    unreadCount,
    lastMessage,
  };
}

export type ConversationService = ReturnType<typeof createConversationService>;

export function createConversationService({ db, unread }: { db: Db; unread: UnreadService }) {
  async function lastMessages(rows: { id: number; lastSeq: number }[]): Promise<Map<number, MessageDTO>> {
    const wanted = rows.filter((r) => r.lastSeq > 0).map((r) => ({ conversationId: r.id, seq: r.lastSeq }));
    if (wanted.length === 0) return new Map();
    const messages = await db.message.findMany({
      where: { OR: wanted },
      include: { sender: { select: { name: true } } },
    });
    return new Map(messages.map((m) => [m.conversationId, toMessageDTO(m)]));
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
        .map((row) => toConversationDTO(row, user.id, counts.counts.get(row.id) ?? 0, last.get(row.id) ?? null))
        .sort((a, b) => activity(b) - activity(a) || b.id - a.id);
      return { conversations, totalUnread: counts.totalUnread, version: counts.version, epoch: counts.epoch };
    }
  }

  /** One conversation as `viewerId` sees it. */
  async function describe(conversationId: number, viewerId: number): Promise<ConversationDTO> {
    const row = await db.conversation.findUniqueOrThrow({
      where: { id: conversationId },
      include: conversationInclude,
    });
    const [last, counts] = await Promise.all([lastMessages([row]), unread.snapshot(viewerId)]);
    return toConversationDTO(row, viewerId, counts.counts.get(row.id) ?? 0, last.get(row.id) ?? null);
  }

  /**
   * One other member: the pair's direct conversation (created once, returned afterwards). More: a new group.
   * Returns the conversation and whether it was created, so the caller can tell the members.
   */
  async function create(
    creator: UserDTO,
    input: { memberNames: string[]; title?: string },
    /** Only the lab opens conversations with its bots; to everyone else a bot account does not exist. */
    options: { withBots?: boolean } = {},
  ): Promise<{ conversationId: number; created: boolean; memberIds: number[] }> {
    const names = [...new Set(input.memberNames)].filter((n) => n !== creator.name);
    if (names.length === 0) throw new AppError("invalid", "Name at least one other member.");
    const users = await db.user.findMany({
      where: { name: { in: names }, ...(options.withBots ? {} : { isBot: false }) },
      select: { id: true, name: true },
    });
    const missing = names.filter((n) => !users.some((u) => u.name === n));
    if (missing.length > 0) throw new AppError("not_found", `No such user: ${missing.join(", ")}.`);
    const memberIds = [creator.id, ...users.map((u) => u.id)];

    if (users.length === 1) {
      const other = users[0]!;
      const directKey = `${Math.min(creator.id, other.id)}:${Math.max(creator.id, other.id)}`;
      const existing = await db.conversation.findUnique({ where: { directKey }, select: { id: true } });
      if (existing) return { conversationId: existing.id, created: false, memberIds };
      try {
        const conv = await db.conversation.create({
          data: {
            kind: "direct",
            directKey,
            createdById: creator.id,
            memberships: { create: memberIds.map((userId) => ({ userId })) },
          },
          select: { id: true },
        });
        return { conversationId: conv.id, created: true, memberIds };
      } catch (err) {
        // Both members created it at the same moment: the unique directKey kept one; return that one.
        const raced = await db.conversation.findUnique({ where: { directKey }, select: { id: true } });
        if (raced) return { conversationId: raced.id, created: false, memberIds };
        throw err;
      }
    }

    const conv = await db.conversation.create({
      data: {
        kind: "group",
        title: input.title?.trim() || null,
        createdById: creator.id,
        memberships: { create: memberIds.map((userId) => ({ userId })) },
      },
      select: { id: true },
    });
    return { conversationId: conv.id, created: true, memberIds };
  }

  /**
   * Leaves a group: the membership goes, with an outbox entry that takes the group out of the user's counters.
   * Returns the members who remain.
   * A direct conversation cannot be left (it would stay the pair's conversation); delete it instead.
   */
  async function leave(user: UserDTO, conversationId: number): Promise<number[]> {
    return db.$transaction(async (tx) => {
      const membership = await tx.membership.findUnique({
        where: { userId_conversationId: { userId: user.id, conversationId } },
        select: { conversation: { select: { kind: true } } },
      });
      if (!membership) throw new AppError("forbidden", "You are not a member of this conversation.");
      if (membership.conversation.kind === "direct") {
        throw new AppError("invalid", "A direct conversation cannot be left; delete it instead.");
      }
      await tx.membership.delete({ where: { userId_conversationId: { userId: user.id, conversationId } } });
      await tx.outboxEvent.create({ data: { kind: "remove", conversationId, userId: user.id, seq: 0 } });
      const remaining = await tx.membership.findMany({ where: { conversationId }, select: { userId: true } });
      return remaining.map((m) => m.userId);
    });
  }

  /**
   * Deletes a conversation for everyone: either member of a direct conversation may, and a group's creator.
   * Returns the former members, whose counters lose it (their outbox entries are written in the same step).
   */
  async function remove(user: UserDTO, conversationId: number): Promise<number[]> {
    return db.$transaction(async (tx) => {
      const conv = await tx.conversation.findFirst({
        where: { id: conversationId, memberships: { some: { userId: user.id } } },
        select: { kind: true, createdById: true, memberships: { select: { userId: true } } },
      });
      if (!conv) throw new AppError("forbidden", "You are not a member of this conversation.");
      if (conv.kind === "group" && conv.createdById !== user.id) {
        throw new AppError("forbidden", "Only the group's creator can delete it; you can leave it.");
      }
      const memberIds = conv.memberships.map((m) => m.userId);
      await tx.conversation.delete({ where: { id: conversationId } });
      await tx.outboxEvent.createMany({
        data: memberIds.map((userId) => ({ kind: "remove" as const, conversationId, userId, seq: 0 })),
      });
      return memberIds;
    });
  }

  return { snapshot, describe, create, leave, remove };
}

function activity(c: ConversationDTO): number {
  return c.lastMessage ? Date.parse(c.lastMessage.createdAt) : 0;
}
