import type { ConversationDTO, MessageDTO, UnreadEntry, UnreadState, UserDTO } from "./index.ts";

/*
 * Database rows to the DTOs of the contract: the one place a row's shape becomes what a client sees. Each query
 * that feeds a mapper selects with the shape declared here (the conversation list's statements in
 * server/unread/snapshot.service.ts build these rows from their columns).
 */

/** Select a message's sender name with it, for `toMessageDTO`. */
export const messageInclude = { sender: { select: { name: true } } } as const;

export interface MessageRow {
  id: number;
  conversationId: number;
  seq: number;
  senderId: number;
  content: string;
  createdAt: Date;
  clientMsgId: string;
  /** Set once its sender deleted it (its content is then ""). */
  deletedAt?: Date | null;
  sender: { name: string };
}

export interface ConversationRow {
  id: number;
  kind: "direct" | "group";
  title: string | null;
  lastSeq: number;
  /** ISO 8601, as `Date.prototype.toISOString` writes it. */
  createdAt: string;
  /** Who created it (null once that account is gone): the only member who may delete a group. */
  createdById: number | null;
  /**
   * By user id. A member's `user` is what a client sees of them, and one object may serve every row they are in.
   * `hidden`: see `hiddenFrom` (absent: shown).
   */
  memberships: { userId: number; lastReadSeq: number; hidden?: boolean; user: UserDTO }[];
}

/**
 * A direct conversation nobody has written in yet is left out of the list of the member who did not start it: they
 * meet it with its first message, or when they start it too. Starting one puts nothing in a stranger's list
 * (docs/security.md, "Unwanted conversations"). A group shows at once: adding people to groups has its own limit.
 */
export function hiddenFrom(
  row: { lastSeq: number; memberships: readonly { userId: number; hidden?: boolean }[] },
  viewerId: number,
): boolean {
  return row.lastSeq === 0 && row.memberships.some((m) => m.userId === viewerId && m.hidden === true);
}

/**
 * Not `hiddenFrom`, as a condition in SQL: the `Membership` aliased `membership` is in its user's list, given its
 * conversation's lastSeq (`lastSeq`: an expression). Only aliases and fixed text, never input, go in.
 */
export function shownSql(membership: string, lastSeq: string): string {
  return `NOT (${membership}."hidden" AND ${lastSeq} = 0)`;
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
    ...(m.deletedAt ? { deleted: true as const } : {}),
  };
}

/**
 * A direct conversation is titled by the other member; an untitled group by its other members, and one that is down
 * to a single other member says it is a group ("Group with dave"), or its row, header, notifications and notices
 * would read as a direct conversation with dave.
 */
function titleFor(row: ConversationRow, viewerId: number): string {
  if (row.kind === "group" && row.title) return row.title;
  const others = row.memberships.filter((m) => m.userId !== viewerId).map((m) => m.user.name);
  if (others.length === 0) return "Just you";
  if (row.kind === "group" && others.length === 1) return `Group with ${others[0]}`;
  return others.join(", ");
}

/** One conversation as `viewerId` sees it, with the unread state Redis holds for them. */
export function toConversationDTO(
  row: ConversationRow,
  viewerId: number,
  unread: UnreadState,
  lastMessage: MessageDTO | null,
): ConversationDTO {
  const me = row.memberships.find((m) => m.userId === viewerId);
  return {
    id: row.id,
    kind: row.kind,
    title: titleFor(row, viewerId),
    members: row.memberships.map((m) => m.user),
    lastSeq: row.lastSeq,
    lastReadSeq: me?.lastReadSeq ?? 0,
    ...unread,
    lastMessage,
    createdAt: row.createdAt,
    canDelete: row.kind === "direct" || row.createdById === viewerId,
  };
}

/** Whether a conversation's state adds anything a snapshot must carry (the rest count nothing and are left out). */
export function countsAnything(state: UnreadState): boolean {
  return state.unreadCount > 0 || state.mentionCount > 0 || state.muted || state.markedUnread;
}

/** A conversation's unread state as a snapshot's `unread` carries it. */
export function toUnreadEntry(conversationId: number, state: UnreadState): UnreadEntry {
  return [
    conversationId,
    state.unreadCount,
    state.mentionCount,
    state.muted ? 1 : 0,
    state.markedUnread ? state.markVersion : 0,
  ];
}

/** The unread state a snapshot's entry stands for. */
export function fromUnreadEntry([, unreadCount, mentionCount, muted, markVersion]: UnreadEntry): UnreadState {
  return { unreadCount, mentionCount, muted: muted === 1, markedUnread: markVersion > 0, markVersion };
}
