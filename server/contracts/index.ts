/**
 * The realtime and HTTP contract shared by the server and the browser. Types only: importing this file never
 * pulls server code into the client bundle. docs/protocol.md describes the same contract in prose.
 */
import type { Ack, SessionEndReason, SessionEnded, UserDTO } from "./common.ts";
import type {
  DeleteMessageInput,
  ListInput,
  MarkUnreadInput,
  MuteInput,
  ReadInput,
  SendInput,
  SyncInput,
} from "./inputs.ts";

export type ConversationKind = "direct" | "group";

export interface MessageDTO {
  id: number;
  conversationId: number;
  seq: number;
  senderId: number;
  senderName: string;
  content: string;
  /** ISO 8601 */
  createdAt: string;
  clientMsgId: string;
  /**
   * Its sender deleted it (`message:delete`): `content` is then "" and it never counts as unread. Absent otherwise.
   * A client keeps a deleted message deleted whatever arrives after (docs/protocol.md, "Deleting a message").
   */
  deleted?: true;
}

export interface ConversationDTO {
  id: number;
  kind: ConversationKind;
  /**
   * For a direct conversation, the other member's name; for a group, its title or its other members' names
   * ("Group with <name>" when one other is left).
   */
  title: string;
  members: UserDTO[];
  lastSeq: number;
  lastReadSeq: number;
  /** The conversation's part of the user's unread state, as in UnreadUpdate. */
  unreadCount: number;
  mentionCount: number;
  muted: boolean;
  markedUnread: boolean;
  markVersion: number;
  lastMessage: MessageDTO | null;
  /** ISO 8601: when it was created; a conversation without messages sorts by it. */
  createdAt: string;
  /**
   * Whether this user may delete it for everyone: either member of a direct conversation, a group's owner (its
   * creator, or after they left the member in it longest); a group's owner may also remove people from it.
   */
  canDelete: boolean;
}

/**
 * Absolute unread state of one conversation for one user, with the user's totals. `version` grows by exactly 1
 * for every change of the user's unread state within one `epoch`; a new epoch means the state was rebuilt.
 * Both invariants hold in every update and snapshot (docs/consistency.md):
 * totalUnread = Σ (muted ? mentionCount : unreadCount) and totalMentions = Σ mentionCount.
 */
export interface UnreadUpdate {
  conversationId: number;
  /** Messages above the read cursor (not the user's, not expired), or 1 when marked unread with none. */
  unreadCount: number;
  /** Those of them that mention the user. */
  mentionCount: number;
  /** Muted: the count stays visible, only its mentions reach totalUnread. */
  muted: boolean;
  /** Marked unread and not read to its end since. */
  markedUnread: boolean;
  /** The mark's version while markedUnread (else 0): a read that means to clear the mark names it. */
  markVersion: number;
  /** The app badge. */
  totalUnread: number;
  totalMentions: number;
  version: number;
  epoch: string;
}

/** The per-conversation part of an UnreadUpdate. */
export type UnreadState = Pick<UnreadUpdate, "unreadCount" | "mentionCount" | "muted" | "markedUnread" | "markVersion">;

/**
 * One conversation's part of the badge in a snapshot, compact because a big user has thousands:
 * `[conversationId, unreadCount, mentionCount, muted (1) or not (0), markVersion while marked unread, else 0]`.
 */
export type UnreadEntry = [
  conversationId: number,
  unreadCount: number,
  mentionCount: number,
  muted: 0 | 1,
  markVersion: number,
];

/**
 * Where a page of the conversation list starts: strictly older than this conversation's last activity (its newest
 * message's time, or its creation's), ties by a lower id. A client passes its oldest listed conversation's.
 */
export interface ListCursor {
  /** ISO 8601 with milliseconds, as MessageDTO.createdAt: the conversation's last activity. */
  at: string;
  id: number;
}

/**
 * One user's whole unread state, read in one atomic step, with their conversation list (newest activity first): the
 * whole list, or with `limit` its first page. The unread state covers every conversation, listed or not: `unread`
 * holds every one with anything to count (the rest count nothing), and the totals are their sum.
 */
export interface Snapshot {
  conversations: ConversationDTO[];
  /** Older conversations follow the listed ones: `conversation:list` pages through them. */
  more: boolean;
  /**
   * The ids of every conversation of the user, listed or not: a client keeps what it has of those (rows it paged in,
   * messages queued for them) and drops the rest.
   */
  conversationIds: number[];
  unread: UnreadEntry[];
  totalUnread: number;
  totalMentions: number;
  version: number;
  epoch: string;
}

export interface ClientToServerEvents {
  "message:send": (input: SendInput, ack: Ack<{ message: MessageDTO }>) => void;
  /**
   * Deletes one of the caller's own messages for everyone (docs/protocol.md, "Deleting a message"): the message as
   * it is now (deleted), and whether this call deleted it (false: it was already).
   */
  "message:delete": (input: DeleteMessageInput, ack: Ack<{ message: MessageDTO; changed: boolean }>) => void;
  /**
   * `changed` tells whether this read changed the user's unread state. If it did, `unread` is that change (one
   * version step, pushed as `unread:changed` too). If not, `unread` is the current state, whose last change may
   * concern another conversation: a client may use it to notice it is behind (then sync), never to patch.
   */
  "conversation:read": (input: ReadInput, ack: Ack<{ unread: UnreadUpdate; changed: boolean }>) => void;
  /** Mutes or unmutes the conversation for the user (in every tab); `unread` is the resulting state. */
  "conversation:mute": (input: MuteInput, ack: Ack<{ unread: UnreadUpdate; changed: boolean }>) => void;
  /** Marks the conversation unread for the user until a read reaches its last message. */
  "conversation:markUnread": (input: MarkUnreadInput, ack: Ack<{ unread: UnreadUpdate; changed: boolean }>) => void;
  /** Without input (or without `limit`), the whole conversation list; with `limit`, its first page. */
  sync: (...args: [ack: Ack<{ snapshot: Snapshot }>] | [input: SyncInput, ack: Ack<{ snapshot: Snapshot }>]) => void;
  /**
   * The next page of the list, older than `before`. Its rows carry their unread state as Redis holds it now, which
   * may be a version ahead of the tab's: a tab keeps the unread state it has from its snapshot and the pushes since.
   */
  "conversation:list": (input: ListInput, ack: Ack<ConversationPage>) => void;
}

/**
 * An add or a removal of group members, as `conversation:updated` tells it: `by` whom, and exactly whom. The push's
 * member list is read after the change committed, so it may also show other changes made meanwhile (a leave, another
 * add): those are not this change's.
 */
export type MemberChange =
  /** `seq`: the group's lastSeq when they joined (as MemberAdded's), so their line goes right above message seq + 1. */
  | { by: { id: number; name: string }; added: number[]; seq: number }
  | { by: { id: number; name: string }; removed: number[] };

/** A page of the conversation list, newest activity first. */
export interface ConversationPage {
  conversations: ConversationDTO[];
  /** Still older conversations follow. */
  more: boolean;
}

/**
 * Why a conversation left the user's list: `left` (the user, in some tab), `deleted` `by` a member (the user too), or
 * `removed` from the group `by` its creator. Without `how`, not known: the outbox relay's replay after a fault does
 * not keep it.
 */
export interface ConversationRemoval {
  conversationId: number;
  how?: { reason: "left" } | { reason: "deleted"; by: number } | { reason: "removed"; by: number };
}

export interface ServerToClientEvents {
  "message:new": (payload: { message: MessageDTO }) => void;
  /** A message its sender deleted (`deleted: true`, content ""), to every member's tabs. */
  "message:deleted": (payload: { message: MessageDTO }) => void;
  "unread:changed": (update: UnreadUpdate) => void;
  /** A conversation the user belongs to was created (by them, in another tab, or by someone else). */
  "conversation:created": (payload: { conversation: ConversationDTO }) => void;
  /**
   * A conversation's members changed (someone left, was added or was removed): its title and member list, not its
   * counts. `change`: who added or removed whom, for an add or a removal (absent for a leave).
   */
  "conversation:updated": (payload: { conversation: ConversationDTO; change?: MemberChange }) => void;
  /** The user left the conversation or it was deleted: drop it (its unread already left the total). */
  "conversation:removed": (payload: ConversationRemoval) => void;
  /** Pushes to this user may have been lost (Redis reconnect, repair by reconciliation): call `sync`. */
  "unread:stale": () => void;
  /** This socket's session ended, and why; the server disconnects the socket right after (`io server disconnect`). */
  "session:ended": (payload: SessionEnded) => void;
  /** The user blocked or unblocked someone (in this tab or another): the whole list as it is now. */
  "blocks:changed": (payload: BlockList) => void;
}

/**
 * Between instances on one Redis (the classic adapter's server-side emit): a stored message and the counters it
 * changed, so that one message between instances carries what every tab needs, `message:new` to every member and
 * `unread:changed` to each member in `updates`, whichever instance holds their sockets (realtime/notifier.ts).
 */
export interface InterServerEvents {
  "message:delivered": (delivery: MessageDelivery) => void;
  /** Sessions ended: each instance tells their sockets why (`session:ended`), in every namespace, then drops them. */
  "session:ended": (ended: { sessionIds: string[]; reason: SessionEndReason }) => void;
}

export interface MessageDelivery {
  memberIds: number[];
  message: MessageDTO;
  /** The members whose counts the message changed, and their new state. */
  updates: { userId: number; update: UnreadUpdate }[];
}

// HTTP bodies
export interface SessionResponse {
  user: UserDTO;
  /** The opaque session token (also set as the httpOnly cookie); send it as `Bearer` or in the socket's `auth`. */
  token: string;
}
/** `GET /api/demo`: the seeded demo accounts and their shared password, or none when SEED_DEMO=0. */
export interface DemoAccounts {
  accounts: string[];
  password: string | null;
}
/** `GET /api/users?prefix=`: names of people who share a conversation with the caller, at most 10. */
export interface UserLookup {
  names: string[];
}

/** `GET /api/blocks`, and what `POST` / `DELETE` answer and `blocks:changed` pushes: the people the user blocked. */
export interface BlockList {
  /** By name, in any letter case. */
  blocked: UserDTO[];
  /**
   * One more at each block or unblock: of two lists (an answer and another tab's push, in either order), the one
   * with the higher version is the newer.
   */
  version: number;
}
/**
 * `GET /api/start`: what a page needs before anything else. `user` is null without a valid session (a 200, so a
 * signed-out page load logs no failed request); `lab` says whether this server runs the consistency lab.
 */
export interface StartResponse {
  user: UserDTO | null;
  lab: boolean;
}
/** A member who left a group: shown in its history as "name left", at `at` among the messages. */
export interface MemberLeft {
  userId: number;
  name: string;
  /** Who removed them (the group's creator): "carol removed dave"; absent when they left by themselves. */
  removedBy?: { id: number; name: string };
  /** ISO 8601 */
  at: string;
}

/** A member added to a group after it began: shown in its history as "carol added dave", at `at`. */
export interface MemberAdded {
  userId: number;
  name: string;
  /** Who added them (null only if that account were deleted: accounts are not, today). */
  by: { id: number; name: string } | null;
  /** The group's lastSeq when they came: the line goes right above the first message after it. */
  seq: number;
  /** ISO 8601 */
  at: string;
}

export interface MessagesResponse {
  messages: MessageDTO[];
  /**
   * A group's members who left it, oldest first (every one, whatever the page: a group has few). Absent from a
   * server older than this field (during a rolling restart); a direct conversation's is empty.
   */
  left?: MemberLeft[];
  /** A group's members added after it began, oldest first, every one, as `left`; absent from an older server. */
  added?: MemberAdded[];
}

export type * from "./common.ts";
/** Validated inputs: each type is inferred from the schema the server checks it with (inputs.ts). */
export type {
  AddMembersInput,
  CreateConversationInput,
  Credentials,
  DeleteMessageInput,
  HistoryQuery,
  ListInput,
  MarkUnreadInput,
  MuteInput,
  ReadInput,
  SendInput,
  SyncInput,
} from "./inputs.ts";
/** The consistency lab's namespace (`/lab`): see lab.ts. */
export type * from "./lab.ts";
