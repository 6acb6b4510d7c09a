import type {
  AddMembersInput,
  ApiError,
  MemberAdded,
  MemberChange,
  MemberLeft,
  BlockList,
  ConversationDTO,
  ConversationKind,
  ConversationRemoval,
  ConversationPage,
  CreateConversationInput,
  DeleteMessageInput,
  ListCursor,
  ListInput,
  MessageDTO,
  MessagesResponse,
  MarkUnreadInput,
  MuteInput,
  ReadInput,
  Result,
  SendInput,
  Credentials,
  SessionEndReason,
  SessionResponse,
  Snapshot,
  StartResponse,
  UnreadState,
  UnreadUpdate,
  UserDTO,
} from "@/server/contracts";

export interface MessagesQuery {
  before?: number;
  after?: number;
  limit?: number;
}

/**
 * Everything the store needs from the server, so the store runs (and is tested) without a socket.
 * Socket commands resolve with the server's acknowledgement and reject when no acknowledgement came in time;
 * a rejection means "unknown outcome", so the caller may retry with the same ids.
 */
export interface ChatTransport {
  send(input: SendInput): Promise<Result<{ message: MessageDTO }>>;
  /** Deletes one of the user's own messages for everyone. */
  deleteMessage(input: DeleteMessageInput): Promise<Result<{ message: MessageDTO; changed: boolean }>>;
  read(input: ReadInput): Promise<Result<{ unread: UnreadUpdate; changed: boolean }>>;
  mute(input: MuteInput): Promise<Result<{ unread: UnreadUpdate; changed: boolean }>>;
  markUnread(input: MarkUnreadInput): Promise<Result<{ unread: UnreadUpdate; changed: boolean }>>;
  /** The whole unread state with the list's first `limit` conversations. */
  sync(limit: number): Promise<Result<{ snapshot: Snapshot }>>;
  /** The list's next page, older than `before`. */
  listConversations(input: ListInput): Promise<Result<ConversationPage>>;
  fetchMessages(conversationId: number, query: MessagesQuery): Promise<Result<MessagesResponse>>;
  /** `conversation` null: made, but not described after the commit (the server logs why); a sync lists it. */
  createConversation(input: CreateConversationInput): Promise<Result<{ conversation: ConversationDTO | null }>>;
  /** Adds people to a group (any member may); HTTP, so it always resolves. */
  addMembers(conversationId: number, input: AddMembersInput): Promise<Result<{ conversation: ConversationDTO | null }>>;
  /** Removes a member from a group (its creator only); HTTP, so it always resolves. */
  removeMember(conversationId: number, userId: number): Promise<Result<{ conversation: ConversationDTO | null }>>;
  /** Groups only; HTTP, so it always resolves. */
  leaveConversation(conversationId: number): Promise<Result>;
  /** A direct conversation (either member) or a group (its creator only); HTTP, so it always resolves. */
  deleteConversation(conversationId: number): Promise<Result>;
}

/** HTTP session calls; these always resolve (network failures become `unavailable`). */
export interface SessionTransport {
  /** The session the cookie holds (`user: null` without one) and what the server offers. */
  current(): Promise<Result<StartResponse>>;
  signIn(credentials: Credentials): Promise<Result<SessionResponse>>;
  signUp(credentials: Credentials): Promise<Result<SessionResponse>>;
  signOut(): Promise<Result>;
  signOutEverywhere(): Promise<Result>;
}

export interface ChatStoreDeps {
  transport: ChatTransport;
  session: SessionTransport;
  /** Defaults to crypto.randomUUID, which exists only in secure contexts. */
  newId?: () => string;
  /** The first pause before a send or a sync is tried again after a missing acknowledgement (then doubling). */
  retryDelayMs?: number;
  /** Where drafts are kept between conversations and reloads; defaults to localStorage in a browser. */
  drafts?: DraftStorage;
  /**
   * Where the send queue survives a reload of this tab (components/store/saved-queue.ts); defaults to sessionStorage
   * in a browser, memory elsewhere.
   */
  queueStorage?: QueueStorage;
  /**
   * How long the conversation being read may keep a count before the client assumes it missed the message
   * (a lost push) and fetches it, so that the read follows.
   */
  staleUnreadMs?: number;
  /** Reads of what scrolled into view within this window go out as one (components/store/read-cursor.ts). */
  readDebounceMs?: number;
  /** How many conversations the sync's first page and each next page hold; defaults to CLIENT_LIST_PAGE. */
  listPage?: number;
}

/** What the open conversation's message list shows, as the list measures it. */
export interface OnScreen {
  /** The highest seq whose message is mostly on screen (half its bubble, or its last line); 0 for none. */
  highestSeq: number;
  /**
   * The list sits at its bottom and keeps to it: a message that arrives is scrolled into view before it is
   * painted, so every loaded message counts as on screen.
   */
  following: boolean;
}

export type SessionStatus = "loading" | "signedOut" | "signedIn";

export interface SessionSlice {
  user: UserDTO | null;
  sessionStatus: SessionStatus;
  connected: boolean;
  /** Whether the server runs the consistency lab (known once restoreSession has answered). */
  lab: boolean;
  /**
   * This tab was signed in and found its session ended by someone else: "Sign out everywhere" on another device,
   * "Sign out" in another tab, or its expiry. The sign-in form says so. Not set by this tab's own sign-out, nor at a
   * page load without a session.
   */
  sessionEnded: boolean;
  /**
   * Why, when the server said so (`session:ended`, just before it dropped the socket); null when it did not (the
   * session ended while the tab was offline, or a reason this client does not know): the form then says it in general.
   */
  sessionEndReason: SessionEndReason | null;
  restoreSession(): Promise<void>;
  /**
   * Signs in, or with `create` makes the account first; resolves with the server's error on failure (its message to
   * show, and the field at fault where one is), or null on success.
   */
  signIn(credentials: Credentials, create?: boolean): Promise<ApiError | null>;
  /** Ends this session, or with `everywhere` every session of the user (other devices drop at once). */
  signOut(everywhere?: boolean): Promise<void>;
  /** The socket (re)connected: replace the snapshot and catch up the open conversation. */
  handleConnected(): void;
  handleDisconnected(): void;
  /** The socket was refused; forget the user locally when the cookie is no longer valid. */
  verifySession(): Promise<boolean>;
  /**
   * The server ended this tab's session (`session:ended`): kept until verifySession finds no session (the disconnect
   * that follows makes it ask), ignored during this tab's own sign-out. `reason` is as received, checked here.
   */
  handleSessionEnded(reason: unknown): void;
}

export interface ConversationsSlice {
  conversations: Record<number, ConversationDTO>;
  /** Conversation ids by last activity, newest first. */
  conversationOrder: number[];
  /**
   * Older conversations than the listed ones exist on the server: the list is its newest part (the sync's first
   * page and the pages loaded since), and the unread state of the rest is known (a snapshot carries every count).
   */
  moreConversations: boolean;
  /** Where the next page of the list starts: the end of the last page (or of the sync's); null with none left. */
  listEnd: ListCursor | null;
  /** A page of older conversations is on its way. */
  loadingConversations: boolean;
  /** Why the last page did not come, until the next try. */
  conversationsError: string | null;
  /** Loads the next page of older conversations (no-op while one loads, a sync runs, or none are left). */
  loadOlderConversations(): Promise<void>;
  activeConversationId: number | null;
  visible: boolean;
  focused: boolean;
  /** Highest seq a read was requested for, per conversation; avoids re-sending the same read. */
  readRequested: Record<number, number>;
  /** Highest seq on screen while the window was visible and focused, per conversation (the read cursor). */
  seenSeq: Record<number, number>;
  /** The server's refusal of the last leave or delete, per conversation. */
  conversationErrors: Record<number, string>;
  /**
   * The open conversation closed by itself: it was deleted, or its user left it, somewhere other than this tab; its
   * title and how, for the notice that says so (null once another conversation is opened or the notice dismissed).
   */
  goneNotice: GoneNoticeState | null;
  dismissGoneNotice(): void;
  /** Opens a conversation: `chosen` by the person, or `restored` (a reload reopening what the tab had open). */
  openConversation(conversationId: number, how?: "chosen" | "restored"): void;
  closeConversation(): void;
  /** Resolves with the server's error message, or null once the new conversation is open. */
  createConversation(input: CreateConversationInput): Promise<string | null>;
  receiveConversation(conversation: ConversationDTO): void;
  /** Resolves with the server's error message, or null once the group shows the people added. */
  addMembers(conversationId: number, memberNames: string[]): Promise<string | null>;
  /** Resolves with the server's error message, or null once the group shows the member gone. */
  removeMember(conversationId: number, userId: number): Promise<string | null>;
  /**
   * New members or title of a conversation this tab shows; unknown (or removed) ones are ignored. `change`: the add or
   * removal that made it, by whom (absent for a leave, or from an older server).
   */
  updateConversation(conversation: ConversationDTO, change?: MemberChange): void;
  /** Resolves with the server's error message (also kept in conversationErrors), or null once it is gone. */
  leaveConversation(conversationId: number): Promise<string | null>;
  /** Resolves with the server's error message (also kept in conversationErrors), or null once it is gone. */
  deleteConversation(conversationId: number): Promise<string | null>;
  /**
   * A conversation:removed push (or a successful leave/delete): forgets the conversation, its count and its
   * messages, so the shown total stays the sum of the shown rows.
   */
  removeConversation(conversationId: number, how?: ConversationRemoval["how"]): void;
  clearConversationError(conversationId: number): void;
  setVisible(visible: boolean): void;
  setFocused(focused: boolean): void;
  /**
   * The message list of the open conversation reports what it shows (null: it is gone). Messages count as read
   * once on screen while the window is visible and focused.
   */
  setOnScreen(conversationId: number, view: OnScreen | null): void;
  /**
   * Moves the read cursor of the open conversation to what is on screen, if the window is visible and focused;
   * the read is sent after the debounce (components/store/read-cursor.ts).
   */
  readIfActive(conversationId: number): void;
}

export interface MessageList {
  /** Ascending by seq, unique by seq and id. */
  items: MessageDTO[];
  /** Items up to this seq are known to have no gaps; newer ones came by push and may follow a gap. */
  tailSeq: number;
  loaded: boolean;
  loading: boolean;
  hasMore: boolean;
  error: string | null;
  /**
   * The load that failed (`error`) was made while the connection was down: retrying by hand cannot help, and the
   * error is cleared when the connection is back (the open conversation loads again once its sync lands).
   */
  offline: boolean;
}

/** The part of the Web Storage API drafts need, so tests (and pages without localStorage) can give their own. */
export type DraftStorage = Pick<Storage, "getItem" | "setItem" | "removeItem" | "key" | "length">;

/** The part of the Web Storage API the saved send queue needs. */
export type QueueStorage = Pick<Storage, "getItem" | "setItem" | "removeItem">;

/**
 * A message not (known to be) stored yet. `queued`: waiting for its turn or for the connection; `sending`: on the
 * wire; `refused`: the server said no (e.g. `invalid`, `forbidden`), so it waits for the person to retry or discard.
 */
export type PendingStatus = "queued" | "sending" | "refused";

export interface PendingMessage {
  clientMsgId: string;
  content: string;
  createdAt: string;
  status: PendingStatus;
  /** Why it is not stored yet: the refusal, or (while queued) the last transient failure, forgotten on reconnect. */
  error: string | null;
}

export interface MessagesSlice {
  messages: Record<number, MessageList>;
  /**
   * Per group, its members who left it, oldest first: from the last history page fetched, and those this tab saw
   * go since (a `conversation:updated` with fewer members), timed when it saw them.
   */
  left: Record<number, MemberLeft[]>;
  /**
   * Per group, its members added after it began, oldest first: from the last history page fetched, and those this
   * tab saw come since (a `conversation:updated` with more members: who added them is not said, `by` null).
   */
  added: Record<number, MemberAdded[]>;
  /** Per conversation, in the order they were sent. */
  pending: Record<number, PendingMessage[]>;
  loadLatest(conversationId: number): Promise<void>;
  loadOlder(conversationId: number): Promise<void>;
  /**
   * Fetches everything after the gap-free tail (`?after=`); with `recheck`, the newest page below it too, so that a
   * deletion whose push was lost shows (a reconnect's catch-up).
   */
  catchUp(conversationId: number, recheck?: boolean): Promise<void>;
  /** Loads the newest page if nothing is loaded yet, else catches up when the list is known to be behind. */
  refreshMessages(conversationId: number): void;
  /**
   * Queues the message (shown pending at once, the conversation's draft cleared); the queue sends one message at a
   * time, in order, while connected, always with the message's own clientMsgId. Resolves true once the server
   * stored it, false when it was refused, discarded or dropped (sign-out, conversation gone); a transient failure
   * (no answer, `unavailable`, `rate_limited`) keeps it queued and retried, so the promise waits.
   */
  sendMessage(conversationId: number, content: string): Promise<boolean>;
  /** Puts a refused message back at the end of the queue, with the same clientMsgId. */
  retryPending(conversationId: number, clientMsgId: string): void;
  /** Drops a refused message (the server never stored it, so nothing else needs to know). */
  discardPending(conversationId: number, clientMsgId: string): void;
  /** The connection is back: forget transient failures and send what is queued now. */
  resumeSending(): void;
  /**
   * The session is known: brings back the user's queue as this tab saved it before a reload (same clientMsgIds,
   * same order, refusals still refused) and sends it when connected. Another user's saved queue stays untouched.
   */
  restoreQueue(): void;
  /** The signed-in user's draft for a conversation ("" when none). */
  draftOf(conversationId: number): string;
  saveDraft(conversationId: number, text: string): void;
  /** A message:new push. */
  receiveMessage(message: MessageDTO): void;
  /**
   * Deletes one of the user's own messages for everyone (refused at once while offline). Resolves with the server's
   * error message, or null once deleted (the list then shows it deleted).
   */
  deleteMessage(messageId: number): Promise<string | null>;
  /** A message:deleted push (or a deletion's acknowledgement): a copy on screen or in the list's row turns deleted. */
  receiveDeleted(message: MessageDTO): void;
}

/** A conversation's unread state beside its count, as the server last said (UnreadState without unreadCount). */
export type UnreadDetail = Omit<UnreadState, "unreadCount">;

export interface UnreadSlice {
  epoch: string | null;
  version: number;
  unreadCounts: Record<number, number>;
  /** Per conversation, changed together with unreadCounts and both totals (checkUnreadInvariants). */
  unreadDetails: Record<number, UnreadDetail>;
  /** The app badge: Σ (muted ? mentionCount : unreadCount). */
  totalUnread: number;
  /** Σ mentionCount. */
  totalMentions: number;
  syncing: boolean;
  /** An unread:changed push or the acknowledgement of a read, mute or mark. */
  applyUnread(update: UnreadUpdate): void;
  /**
   * Mutes or unmutes for the user (every tab); the acknowledgement's state is applied like a read's. Resolves with
   * the server's error message (also kept in conversationErrors), or null once acknowledged.
   */
  mute(conversationId: number, muted: boolean): Promise<string | null>;
  /** Marks the conversation unread until a read reaches its last message; same answers as mute. */
  markUnread(conversationId: number): Promise<string | null>;
  /** The unread in an acknowledgement that changed nothing: the current state, not one step. */
  probeUnread(update: UnreadUpdate): void;
  /** Starts a sync unless one is running; `force` supersedes a running one (e.g. after a reconnect). */
  requestSync(force?: boolean): void;
  /** An unread:stale push: pushes may have been lost, so replace everything with a snapshot and catch up. */
  handleStale(): void;
  applySnapshot(snapshot: Snapshot): void;
}

export interface BlocksSlice {
  /** The people the user blocked, by name (`GET /api/blocks`, `blocks:changed`). */
  blocked: UserDTO[];
  /** The version of `blocked` (-1: none yet). */
  blocksVersion: number;
  /**
   * Takes `list` unless the list held is newer (a higher version), or `userId` (whom it was asked for; a push on
   * the socket, always the signed-in user's, omits it) is no longer the signed-in user.
   */
  setBlocked(list: BlockList, userId?: number): void;
  /** No list, any version taken: for a new socket, whose user may not be the last one's. */
  resetBlocked(): void;
}

export type ChatState = SessionSlice & ConversationsSlice & MessagesSlice & UnreadSlice & BlocksSlice;

/** Why the open conversation closed by itself, as far as this tab knows. */
export type GoneCause =
  | { kind: "left" }
  /** `by`: "you" (another tab or device of the user), a member's name, or null when not known. */
  | { kind: "deleted"; by: string | null }
  /** Removed from the group by its creator: their name, or null when not known. */
  | { kind: "removed"; by: string | null }
  /** The server did not say (a replay after a fault). */
  | { kind: "unknown" };

export interface GoneNoticeState {
  /** The conversation's title, null when this tab did not know it. */
  title: string | null;
  conversationKind: ConversationKind | null;
  cause: GoneCause;
}
