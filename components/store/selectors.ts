import { EMPTY_LIST } from "./messages";
import { badgeShare, othersUnseenBelow, shownMentions, shownUnread } from "./runtime";
import type { ChatState, MessageList, PendingMessage } from "./types";

// Selectors must return stable references: zustand re-renders (or loops) on a fresh [] every call.
const NO_PENDING: PendingMessage[] = [];

/**
 * What the badges show: the server's count, less what this tab has seen and the server has not counted off yet
 * (runtime.ts `shownUnread`). The total drops by the same amounts, so "total = sum of the rows" holds for what is
 * shown.
 */
export const selectShownUnread =
  (id: number) =>
  (s: ChatState): number =>
    shownUnread(s, id);

export const selectShownTotal = (s: ChatState): number => {
  let hidden = 0;
  for (const key of Object.keys(s.seenSeq)) {
    const id = Number(key);
    hidden += badgeShare(s, id, false) - badgeShare(s, id, true);
  }
  return Math.max(0, s.totalUnread - hidden);
};

/** The shown mentions of a conversation (runtime.ts `shownMentions`). */
export const selectShownMentions =
  (id: number) =>
  (s: ChatState): number =>
    shownMentions(s, id);
export const selectMuted =
  (id: number) =>
  (s: ChatState): boolean =>
    s.unreadDetails[id]?.muted ?? false;
export const selectMarkedUnread =
  (id: number) =>
  (s: ChatState): boolean =>
    s.unreadDetails[id]?.markedUnread ?? false;

/**
 * Why "Mark as unread" would do nothing for a conversation, as the row menu says it; null when it would mark it. A
 * row that shows something unread (its own messages or a mark) is unread already, and one with no message yet has
 * nothing to come back to (the server does not mark it).
 */
export const selectMarkUnreadRefusal =
  (id: number) =>
  (s: ChatState): string | null => {
    // The count first: a mark made on an empty conversation before the server refused them still shows 1.
    if (shownUnread(s, id) > 0) return "Already unread";
    return s.conversations[id]?.lastMessage ? null : "No messages yet";
  };

/** The server's counts, unmasked. */
export const selectConversationOrder = (s: ChatState): number[] => s.conversationOrder;
export const selectActiveConversationId = (s: ChatState): number | null => s.activeConversationId;
export const selectUser = (s: ChatState) => s.user;
export const selectSessionStatus = (s: ChatState) => s.sessionStatus;
export const selectConnected = (s: ChatState): boolean => s.connected;

export const selectConversation = (id: number) => (s: ChatState) => s.conversations[id];
/** Others' messages loaded below what this tab has seen and read (runtime.ts `othersUnseenBelow`). */
export const selectOthersUnseenBelow =
  (id: number) =>
  (s: ChatState): boolean =>
    othersUnseenBelow(s, id);
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

/**
 * What the conversations the list does not show yet (older ones, a page away) add to the badge and to the mentions:
 * the list's footer shows it, so the badge is still the sum of what the list shows.
 */
export const selectUnlistedUnread = (s: ChatState): number => {
  let unread = 0;
  for (const key of Object.keys(s.unreadCounts)) {
    const id = Number(key);
    if (!s.conversations[id]) unread += badgeShare(s, id, true);
  }
  return unread;
};
export const selectUnlistedMentions = (s: ChatState): number => {
  let mentions = 0;
  for (const key of Object.keys(s.unreadDetails)) {
    if (!s.conversations[Number(key)]) mentions += shownMentions(s, Number(key));
  }
  return mentions;
};
