import { CLIENT_LIST_PAGE } from "@/server/contracts/inputs";
import type { ConversationDTO, MessageDTO, UnreadUpdate } from "@/server/contracts";
import { defaultDraftStorage } from "./drafts";
import { defaultQueueStorage } from "./saved-queue";
import type { ReadCursor } from "./read-cursor";
import type { ChatState, ChatStoreDeps, OnScreen } from "./types";

/** What an action answers when the server cannot be asked (offline), or never answered: said where the person acted. */
export const OFFLINE = "You are offline; try again once the connection is back.";
export const NO_ANSWER = "The server did not answer; try again.";

/** Per-store bookkeeping that never renders, so it lives beside the zustand state rather than in it. */
export interface StoreRuntime {
  deps: Required<ChatStoreDeps>;
  /** Bumped on sign-out so that late answers addressed to the previous session are dropped. */
  generation: number;
  sync: {
    /** Identifies the newest sync; answers to superseded syncs are dropped. */
    token: number;
    /** Updates received while a sync is in flight; the snapshot may predate them. */
    buffer: UnreadUpdate[];
    /** Acknowledgements that changed nothing, received during a sync: checked against the snapshot. */
    probes: UnreadUpdate[];
    /** Conversations seen in a push but not in the list → the first sync token whose snapshot must hold them. */
    wanted: Map<number, number>;
    failures: number;
    /** After a reconnect the open conversation is caught up even if the snapshot shows nothing new. */
    catchUpActive: boolean;
    retryTimer: ReturnType<typeof setTimeout> | null;
  };
  /**
   * Loaded message lists that may have missed a `message:deleted` (pushes were lost while the connection was down):
   * their newest page is fetched again when each is next shown.
   */
  recheck: Set<number>;
  /**
   * Ids of messages this tab heard were deleted (`message:deleted`, or its own deletion's answer): a copy read before
   * the deletion (a page, a snapshot's row, a replayed push) that arrives after it is taken as deleted.
   */
  deletedIds: Set<number>;
  /** Pending checks of a count that appeared in the conversation being read, per conversation. */
  unreadWatch: Map<number, ReturnType<typeof setTimeout>>;
  /** Conversations removed here; pushes for them that were already on the way must not bring them back. */
  removed: Set<number>;
  /** Conversations this tab asked the server to leave or delete, until it answers. */
  dropping: Set<number>;
  /**
   * Conversations whose action error (conversationErrors) says only that the server could not be reached: once
   * connected again it no longer holds, and the sync that follows shows what did happen.
   */
  unreachable: Set<number>;
  /** What the open conversation's message list shows, as it last reported (null: nothing reported yet). */
  view: (OnScreen & { conversationId: number }) | null;
  /** The read cursor (components/store/read-cursor.ts) of each conversation read here. */
  cursors: Map<number, ReadCursor>;
  /** Per conversation, the markVersion a read already asked to clear, so each mark is cleared by one read. */
  markClears: Map<number, number>;
  /**
   * Conversations this tab marked unread while they were open: the person is still looking at them, so their
   * mark is not read away until they are opened again.
   */
  markHeld: Set<number>;
  outbox: Outbox;
}

/** The send queue (components/store/messages.ts); what it shows lives in the store's `pending`. */
export interface Outbox {
  /** Messages to send, oldest first, across conversations; a refused one leaves it until retried. */
  queue: { conversationId: number; clientMsgId: string }[];
  /** One message on the wire at a time, so they are stored in the order they were sent. */
  busy: boolean;
  /** Transient failures in a row, for the backoff. */
  failures: number;
  retryTimer: ReturnType<typeof setTimeout> | null;
  /** Settles sendMessage's promise: true once stored, false once refused or dropped. */
  settle: Map<string, (stored: boolean) => void>;
}

/** Forgets the queue (sign-out); every sendMessage still waiting resolves false. */
export function clearOutbox(outbox: Outbox): void {
  if (outbox.retryTimer) clearTimeout(outbox.retryTimer);
  outbox.retryTimer = null;
  outbox.queue = [];
  outbox.busy = false;
  outbox.failures = 0;
  const waiting = [...outbox.settle.values()];
  outbox.settle.clear();
  for (const settle of waiting) settle(false);
}

export function createRuntime(deps: ChatStoreDeps): StoreRuntime {
  return {
    deps: {
      newId: defaultNewId,
      retryDelayMs: 1000,
      staleUnreadMs: 2000,
      readDebounceMs: 300,
      listPage: CLIENT_LIST_PAGE,
      ...deps,
      drafts: deps.drafts ?? defaultDraftStorage(),
      queueStorage: deps.queueStorage ?? defaultQueueStorage(),
    },
    generation: 0,
    sync: { token: 0, buffer: [], probes: [], wanted: new Map(), failures: 0, catchUpActive: false, retryTimer: null },
    unreadWatch: new Map(),
    recheck: new Set(),
    deletedIds: new Set(),
    removed: new Set(),
    dropping: new Set(),
    unreachable: new Set(),
    view: null,
    cursors: new Map(),
    markClears: new Map(),
    markHeld: new Set(),
    outbox: { queue: [], busy: false, failures: 0, retryTimer: null, settle: new Map() },
  };
}

function defaultNewId(): string {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  // randomUUID is missing outside secure contexts (plain http on a LAN address); build a v4 UUID by hand.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The newest seq this client knows of in a conversation, from the list entry or from loaded messages. */
export function latestSeq(state: ChatState, conversationId: number): number {
  const fromList = state.conversations[conversationId]?.lastSeq ?? 0;
  const fromMessages = state.messages[conversationId]?.items.at(-1)?.seq ?? 0;
  return Math.max(fromList, fromMessages);
}

/** The conversation is open in a window that is visible and focused: what its list shows is being seen. */
export function isBeingRead(state: ChatState, conversationId: number): boolean {
  return state.activeConversationId === conversationId && state.visible && state.focused;
}

/**
 * The count a badge shows: the server's, less the messages this tab has seen whose read the server has not
 * applied yet (so a badge counts down as the person scrolls, and a message that arrives on screen never shows up
 * in it). Unread counts are others' messages above the cursor (server/redis/lua/apply.lua), so the messages above
 * the highest seen seq, less the user's own loaded ones, bound it; the server's own count wins when it is lower
 * (another tab read further, expiry).
 */
export function shownUnread(state: ChatState, conversationId: number): number {
  const count = state.unreadCounts[conversationId] ?? 0;
  const seen = state.seenSeq[conversationId];
  // A mark counts no message, so nothing seen can explain it away: only the server clears it.
  if (seen === undefined || count === 0 || state.unreadDetails[conversationId]?.markedUnread) return count;
  return Math.min(count, Math.max(0, latestSeq(state, conversationId) - seen - ownAbove(state, conversationId, seen)));
}

/**
 * The user's own messages, and messages deleted by their senders, loaded above `seq`: they never count
 * (docs/consistency.md, "Own messages" and "7. Deleting a message").
 */
function ownAbove(state: ChatState, conversationId: number, seq: number): number {
  const me = state.user?.id;
  let own = 0;
  const items = state.messages[conversationId]?.items ?? [];
  for (let i = items.length - 1; i >= 0 && items[i]!.seq > seq; i--)
    if (items[i]!.senderId === me || items[i]!.deleted) own++;
  return own;
}

/**
 * Messages of others loaded below what this tab has seen and read of the conversation: a send does not scroll past
 * them (components/chat/MessageList.tsx).
 */
export function othersUnseenBelow(state: ChatState, conversationId: number): boolean {
  const me = state.user?.id;
  const upTo = Math.max(state.seenSeq[conversationId] ?? 0, state.readRequested[conversationId] ?? 0);
  const items = state.messages[conversationId]?.items ?? [];
  for (let i = items.length - 1; i >= 0 && items[i]!.seq > upTo; i--)
    if (items[i]!.senderId !== me && !items[i]!.deleted) return true;
  return false;
}

/**
 * The mentions a badge shows: mentions are among the unread messages, so there are never more of them than the
 * shown count.
 */
export function shownMentions(state: ChatState, conversationId: number): number {
  const mentions = state.unreadDetails[conversationId]?.mentionCount ?? 0;
  return mentions === 0 ? 0 : Math.min(mentions, shownUnread(state, conversationId));
}

/** What a conversation adds to the app badge: its count, or while muted only its mentions. */
export function badgeShare(state: ChatState, conversationId: number, shown: boolean): number {
  const muted = state.unreadDetails[conversationId]?.muted ?? false;
  if (!shown)
    return muted ? (state.unreadDetails[conversationId]?.mentionCount ?? 0) : (state.unreadCounts[conversationId] ?? 0);
  return muted ? shownMentions(state, conversationId) : shownUnread(state, conversationId);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `message` as this tab knows it: one whose deletion it heard is deleted, whatever older copy this is. */
export function asKnown(rt: StoreRuntime, message: MessageDTO): MessageDTO {
  return message.deleted || !rt.deletedIds.has(message.id) ? message : { ...message, content: "", deleted: true };
}

/** A conversation's row with its last message as this tab knows it (asKnown). */
export function rowAsKnown(rt: StoreRuntime, conversation: ConversationDTO): ConversationDTO {
  const last = conversation.lastMessage;
  return last && !last.deleted && rt.deletedIds.has(last.id)
    ? { ...conversation, lastMessage: asKnown(rt, last) }
    : conversation;
}
