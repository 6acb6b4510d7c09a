/**
 * The realtime and HTTP contract shared by the server and the browser. Types only: importing this file never
 * pulls server code into the client bundle. docs/protocol.md describes the same contract in prose.
 */

export type ErrorCode =
  | "invalid"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "unsupported_media_type"
  | "rate_limited"
  | "unavailable";

export interface ApiError {
  code: ErrorCode;
  message: string;
  /** With `rate_limited`: how long to wait before the same call can succeed (HTTP also sends Retry-After). */
  retryAfterMs?: number;
}

/** Every acknowledgement and every HTTP error body has this shape. */
export type Result<T extends object = object> = ({ ok: true } & T) | { ok: false; error: ApiError };

export interface UserDTO {
  id: number;
  name: string;
  /** A lab bot account (shown as a bot); absent for people. */
  bot?: true;
}

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
}

export interface ConversationDTO {
  id: number;
  kind: ConversationKind;
  /** For a direct conversation, the other member's name; for a group, its title or its members' names. */
  title: string;
  members: UserDTO[];
  lastSeq: number;
  lastReadSeq: number;
  unreadCount: number;
  lastMessage: MessageDTO | null;
}

/**
 * Absolute unread state of one conversation for one user, with the user's total. `version` grows by exactly 1
 * for every change of the user's unread state within one `epoch`; a new epoch means the state was rebuilt.
 */
export interface UnreadUpdate {
  conversationId: number;
  unreadCount: number;
  totalUnread: number;
  version: number;
  epoch: string;
}

/** One user's whole unread state and conversation list, read in one atomic step. */
export interface Snapshot {
  conversations: ConversationDTO[];
  totalUnread: number;
  version: number;
  epoch: string;
}

export interface SendInput {
  conversationId: number;
  clientMsgId: string;
  content: string;
}

export interface ReadInput {
  conversationId: number;
  seq: number;
}

export type Ack<T extends object> = (res: Result<T>) => void;

export interface ClientToServerEvents {
  "message:send": (input: SendInput, ack: Ack<{ message: MessageDTO }>) => void;
  /**
   * `changed` tells whether this read changed the user's unread state. If it did, `unread` is that change (one
   * version step, pushed as `unread:changed` too). If not, `unread` is the current state, whose last change may
   * concern another conversation: a client may use it to notice it is behind (then sync), never to patch.
   */
  "conversation:read": (input: ReadInput, ack: Ack<{ unread: UnreadUpdate; changed: boolean }>) => void;
  sync: (ack: Ack<{ snapshot: Snapshot }>) => void;
}

export interface ServerToClientEvents {
  "message:new": (payload: { message: MessageDTO }) => void;
  "unread:changed": (update: UnreadUpdate) => void;
  /** A conversation the user belongs to was created (by them, in another tab, or by someone else). */
  "conversation:created": (payload: { conversation: ConversationDTO }) => void;
  /** A conversation's members changed (someone left): its title and member list, not its counts. */
  "conversation:updated": (payload: { conversation: ConversationDTO }) => void;
  /** The user left the conversation or it was deleted: drop it (its unread already left the total). */
  "conversation:removed": (payload: { conversationId: number }) => void;
  /** Pushes to this user may have been lost (Redis reconnect, repair by reconciliation): call `sync`. */
  "unread:stale": () => void;
}

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface InterServerEvents {}

export interface SocketData {
  user: UserDTO;
  /** The server-side session the socket was opened with; revoking it disconnects the socket. */
  sessionId: string;
}

// HTTP bodies
export interface SessionResponse {
  user: UserDTO;
  /** The opaque session token (also set as the httpOnly cookie); send it as `Bearer` or in the socket's `auth`. */
  token: string;
}
export interface Credentials {
  name: string;
  password: string;
}
/** `GET /api/demo`: the seeded demo accounts and their shared password, or none when SEED_DEMO=0. */
export interface DemoAccounts {
  accounts: string[];
  password: string | null;
}
export interface CreateConversationInput {
  memberNames: string[];
  title?: string;
}
export interface MessagesResponse {
  messages: MessageDTO[];
}

/** The consistency lab's namespace (`/lab`): see lab.ts. */
export type * from "./lab.ts";
