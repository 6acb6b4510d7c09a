import type { StateCreator } from "zustand/vanilla";
import type { ConversationDTO, MessageDTO, Result } from "@/server/contracts";
import { isBeingRead, latestSeq, type StoreRuntime } from "./runtime";
import type { ChatState, ConversationsSlice } from "./types";

/** Its last message's time, or while it has none its creation time: creating a conversation is activity too. */
function activityTime(conversation: ConversationDTO): number | null {
  const time = Date.parse(conversation.lastMessage?.createdAt ?? conversation.createdAt);
  return Number.isNaN(time) ? null : time;
}

/** Newest activity first (a new conversation counts from its creation); ties and unknown times: newest id first. */
export function compareConversations(a: ConversationDTO, b: ConversationDTO): number {
  const ta = activityTime(a);
  const tb = activityTime(b);
  if (ta !== null && tb !== null && ta !== tb) return tb - ta;
  if (ta !== null && tb === null) return -1;
  if (ta === null && tb !== null) return 1;
  return b.id - a.id;
}

export function sortConversationIds(conversations: Record<number, ConversationDTO>): number[] {
  return Object.values(conversations)
    .sort(compareConversations)
    .map((c) => c.id);
}

/** The conversation as it is after `message`, or the same object when the message is not its newest. */
export function withMessage(conversation: ConversationDTO, message: MessageDTO): ConversationDTO {
  if (message.seq < conversation.lastSeq) return conversation;
  if (message.seq === conversation.lastSeq && conversation.lastMessage?.id === message.id) return conversation;
  return { ...conversation, lastSeq: message.seq, lastMessage: message };
}

export const initialConversationsState = {
  conversations: {},
  conversationOrder: [],
  activeConversationId: null,
  readRequested: {},
  conversationErrors: {},
} satisfies Partial<ConversationsSlice>;

function without<T>(record: Record<number, T>, id: number): Record<number, T> {
  if (!(id in record)) return record;
  const copy = { ...record };
  delete copy[id];
  return copy;
}

export function createConversationsSlice(rt: StoreRuntime): StateCreator<ChatState, [], [], ConversationsSlice> {
  return (set, get) => {
    /** Leave and delete share everything but the request: on success the conversation goes at once. */
    async function dropOnServer(conversationId: number, request: Promise<Result>): Promise<string | null> {
      get().clearConversationError(conversationId);
      const generation = rt.generation;
      const res = await request;
      if (generation !== rt.generation) return null;
      if (!res.ok) {
        set((s) => ({ conversationErrors: { ...s.conversationErrors, [conversationId]: res.error.message } }));
        return res.error.message;
      }
      // The server pushes conversation:removed too, but this tab need not wait for it (nor lose it).
      get().removeConversation(conversationId);
      return null;
    }

    return {
      ...initialConversationsState,
      visible: false,
      focused: false,

      openConversation(conversationId) {
        set({ activeConversationId: conversationId });
        get().clearConversationError(conversationId);
        get().refreshMessages(conversationId);
        get().readIfActive(conversationId);
      },

      closeConversation() {
        set({ activeConversationId: null });
      },

      async createConversation(input) {
        const generation = rt.generation;
        const res = await rt.deps.transport.createConversation(input);
        if (generation !== rt.generation) return null;
        if (!res.ok) return res.error.message;
        get().receiveConversation(res.conversation);
        get().openConversation(res.conversation.id);
        return null;
      },

      leaveConversation(conversationId) {
        return dropOnServer(conversationId, rt.deps.transport.leaveConversation(conversationId));
      },

      deleteConversation(conversationId) {
        return dropOnServer(conversationId, rt.deps.transport.deleteConversation(conversationId));
      },

      removeConversation(conversationId) {
        const s = get();
        const known =
          s.conversations[conversationId] !== undefined ||
          s.unreadCounts[conversationId] !== undefined ||
          s.messages[conversationId] !== undefined;
        // The push after this tab's own leave or delete (or the other way round): already done.
        if (!known && rt.removed.has(conversationId)) return;
        rt.removed.add(conversationId);
        rt.sync.wanted.delete(conversationId);
        const watch = rt.unreadWatch.get(conversationId);
        if (watch) clearTimeout(watch);
        rt.unreadWatch.delete(conversationId);

        const counted = s.unreadCounts[conversationId] ?? 0;
        set((s) => {
          const conversations = without(s.conversations, conversationId);
          return {
            conversations,
            conversationOrder:
              conversations === s.conversations
                ? s.conversationOrder
                : s.conversationOrder.filter((id) => id !== conversationId),
            activeConversationId: s.activeConversationId === conversationId ? null : s.activeConversationId,
            readRequested: without(s.readRequested, conversationId),
            conversationErrors: without(s.conversationErrors, conversationId),
            messages: without(s.messages, conversationId),
            pending: without(s.pending, conversationId),
            unreadCounts: without(s.unreadCounts, conversationId),
            // Its count leaves the total in the same step as its row, so no badge ever disagrees with the rows.
            totalUnread: Math.max(0, s.totalUnread - counted),
          };
        });
        // A snapshot already on its way may predate the removal and would bring the conversation back.
        if (get().syncing) get().requestSync(true);
        // The server's unread:changed that zeroes the count has not come (yet): the local total is a guess.
        else if (counted > 0) get().requestSync();
      },

      clearConversationError(conversationId) {
        if (get().conversationErrors[conversationId] === undefined) return;
        set((s) => ({ conversationErrors: without(s.conversationErrors, conversationId) }));
      },

      updateConversation(conversation) {
        if (get().conversations[conversation.id]) get().receiveConversation(conversation);
      },

      receiveConversation(conversation) {
        const known = get().conversations[conversation.id] !== undefined;
        set((s) => {
          const known = s.conversations[conversation.id];
          const merged =
            known && known.lastSeq > conversation.lastSeq
              ? { ...conversation, lastSeq: known.lastSeq, lastMessage: known.lastMessage }
              : conversation;
          const conversations = { ...s.conversations, [conversation.id]: merged };
          return {
            conversations,
            conversationOrder: sortConversationIds(conversations),
            readRequested:
              s.readRequested[conversation.id] === undefined
                ? { ...s.readRequested, [conversation.id]: conversation.lastReadSeq }
                : s.readRequested,
          };
        });
        // A snapshot already on its way may predate the conversation and would drop it again.
        if (!known && get().syncing) get().requestSync(true);
        const active = get().activeConversationId;
        if (active === conversation.id) get().readIfActive(active);
      },

      setVisible(visible) {
        if (get().visible === visible) return;
        set({ visible });
        const active = get().activeConversationId;
        if (active !== null) get().readIfActive(active);
      },

      setFocused(focused) {
        if (get().focused === focused) return;
        set({ focused });
        const active = get().activeConversationId;
        if (active !== null) get().readIfActive(active);
      },

      readIfActive(conversationId) {
        const state = get();
        if (!isBeingRead(state, conversationId)) return;
        const seq = latestSeq(state, conversationId);
        const previous = state.readRequested[conversationId];
        if (seq <= 0 || seq <= (previous ?? 0)) return;
        set((s) => ({ readRequested: { ...s.readRequested, [conversationId]: seq } }));

        const generation = rt.generation;
        // A read that failed must not block the same seq forever; a newer request stays as it is.
        const rollBack = () => {
          if (generation !== rt.generation || get().readRequested[conversationId] !== seq) return;
          set((s) => {
            const readRequested = { ...s.readRequested };
            if (previous === undefined) delete readRequested[conversationId];
            else readRequested[conversationId] = previous;
            return { readRequested };
          });
        };
        rt.deps.transport.read({ conversationId, seq }).then((res) => {
          if (generation !== rt.generation) return;
          if (res.ok) {
            if (res.changed) get().applyUnread(res.unread);
            else get().probeUnread(res.unread);
          } else rollBack();
        }, rollBack);
      },
    };
  };
}
