import type { StateCreator } from "zustand/vanilla";
import type { ConversationDTO, MessageDTO } from "@/server/contracts";
import { isBeingRead, latestSeq, type StoreRuntime } from "./runtime";
import type { ChatState, ConversationsSlice } from "./types";

function activityTime(conversation: ConversationDTO): number | null {
  if (!conversation.lastMessage) return null;
  const time = Date.parse(conversation.lastMessage.createdAt);
  return Number.isNaN(time) ? null : time;
}

/** Newest activity first; conversations without messages follow, newest id first. */
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
} satisfies Partial<ConversationsSlice>;

export function createConversationsSlice(rt: StoreRuntime): StateCreator<ChatState, [], [], ConversationsSlice> {
  return (set, get) => ({
    ...initialConversationsState,
    visible: false,
    focused: false,

    openConversation(conversationId) {
      set({ activeConversationId: conversationId });
      get().clearSendError(conversationId);
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

    receiveConversation(conversation) {
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
        if (res.ok) get().applyUnread(res.unread);
        else rollBack();
      }, rollBack);
    },
  });
}
