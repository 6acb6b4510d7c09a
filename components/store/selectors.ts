import { EMPTY_LIST } from "./messages";
import { isBeingRead } from "./runtime";
import type { ChatState, MessageList, PendingMessage } from "./types";

// Selectors must return stable references: zustand re-renders (or loops) on a fresh [] every call.
const NO_PENDING: PendingMessage[] = [];

/**
 * What the badges show. The conversation being read shows no count: it is on screen, and its read is already
 * on the way, so a push that raises it and the acknowledgement that clears it a moment later must not make a
 * badge flash. Shown total minus the hidden count keeps "total = sum of the rows" true for what is shown.
 */
export const selectShownUnread =
  (id: number) =>
  (s: ChatState): number =>
    isBeingRead(s, id) ? 0 : (s.unreadCounts[id] ?? 0);

export const selectShownTotal = (s: ChatState): number => {
  const active = s.activeConversationId;
  const hidden = active !== null && isBeingRead(s, active) ? (s.unreadCounts[active] ?? 0) : 0;
  return Math.max(0, s.totalUnread - hidden);
};

/** The server's counts, unmasked. */
export const selectConversationOrder = (s: ChatState): number[] => s.conversationOrder;
export const selectActiveConversationId = (s: ChatState): number | null => s.activeConversationId;
export const selectUser = (s: ChatState) => s.user;
export const selectSessionStatus = (s: ChatState) => s.sessionStatus;
export const selectConnected = (s: ChatState): boolean => s.connected;

export const selectConversation = (id: number) => (s: ChatState) => s.conversations[id];
export const selectMessageList =
  (id: number) =>
  (s: ChatState): MessageList =>
    s.messages[id] ?? EMPTY_LIST;
export const selectPending =
  (id: number) =>
  (s: ChatState): PendingMessage[] =>
    s.pending[id] ?? NO_PENDING;
/** Messages waiting to go out (queued or on the wire), in every conversation; refused ones wait for a choice. */
export const selectQueuedCount = (s: ChatState): number => {
  let count = 0;
  for (const items of Object.values(s.pending)) for (const p of items) if (p.status !== "refused") count++;
  return count;
};
export const selectConversationError =
  (id: number) =>
  (s: ChatState): string | null =>
    s.conversationErrors[id] ?? null;
