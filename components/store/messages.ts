import type { StateCreator } from "zustand/vanilla";
import type { MessageDTO, MessagesResponse, Result } from "@/server/contracts";
import { sortConversationIds, withMessage } from "./conversations";
import { latestSeq, sleep, type StoreRuntime } from "./runtime";
import type { ChatState, MessageList, MessagesQuery, MessagesSlice } from "./types";

export const PAGE_SIZE = 50;
export const CATCH_UP_PAGE = 200;
/** Beyond this many missed messages, reloading the newest page is cheaper than replaying them all. */
export const MAX_CATCH_UP = 1000;
export const SEND_ATTEMPTS = 3;
export const NO_ANSWER_MESSAGE = "The server did not answer, so the message was not sent. Please try again.";

export const EMPTY_LIST: MessageList = {
  items: [],
  tailSeq: 0,
  loaded: false,
  loading: false,
  hasMore: false,
  error: null,
};

/** Ascending by seq; a message already present (same seq or id) is kept as is. Returns `existing` if unchanged. */
export function mergeMessages(existing: MessageDTO[], incoming: MessageDTO[]): MessageDTO[] {
  if (incoming.length === 0) return existing;
  const only = incoming.length === 1 ? incoming[0] : undefined;
  const last = existing.at(-1);
  if (only && (!last || only.seq > last.seq)) {
    return existing.some((m) => m.id === only.id) ? existing : [...existing, only];
  }

  const bySeq = new Map(existing.map((m) => [m.seq, m]));
  const ids = new Set(existing.map((m) => m.id));
  let changed = false;
  for (const message of incoming) {
    if (bySeq.has(message.seq) || ids.has(message.id)) continue;
    bySeq.set(message.seq, message);
    ids.add(message.id);
    changed = true;
  }
  if (!changed) return existing;
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

/** Moves the gap-free tail forward over consecutive seqs. */
export function extendTail(items: MessageDTO[], tailSeq: number): number {
  let tail = tailSeq;
  for (const message of items) {
    if (message.seq <= tail) continue;
    if (message.seq !== tail + 1) break;
    tail = message.seq;
  }
  return tail;
}

const unavailable = (): Result<MessagesResponse> => ({
  ok: false,
  error: { code: "unavailable", message: "Could not load messages." },
});

export function createMessagesSlice(rt: StoreRuntime): StateCreator<ChatState, [], [], MessagesSlice> {
  return (set, get) => {
    function patchList(conversationId: number, patch: (list: MessageList) => Partial<MessageList>): void {
      set((s) => {
        const list = s.messages[conversationId] ?? EMPTY_LIST;
        return { messages: { ...s.messages, [conversationId]: { ...list, ...patch(list) } } };
      });
    }

    function fetchPage(conversationId: number, query: MessagesQuery): Promise<Result<MessagesResponse>> {
      return rt.deps.transport.fetchMessages(conversationId, query).catch(unavailable);
    }

    /** After a successful load the open conversation may still be behind, or may now have more to read. */
    function afterLoad(conversationId: number): void {
      if (get().activeConversationId !== conversationId) return;
      get().refreshMessages(conversationId);
      get().readIfActive(conversationId);
    }

    function ingest(message: MessageDTO): void {
      const id = message.conversationId;
      if (rt.removed.has(id)) return;
      set((s) => {
        const list = s.messages[id] ?? EMPTY_LIST;
        const items = mergeMessages(list.items, [message]);
        const waiting = s.pending[id];
        const conversation = s.conversations[id];
        const updated = conversation ? withMessage(conversation, message) : undefined;
        const conversations =
          updated && updated !== conversation ? { ...s.conversations, [id]: updated } : s.conversations;
        return {
          messages:
            items === list.items
              ? s.messages
              : {
                  ...s.messages,
                  [id]: { ...list, items, tailSeq: list.loaded ? extendTail(items, list.tailSeq) : list.tailSeq },
                },
          pending: waiting?.some((p) => p.clientMsgId === message.clientMsgId)
            ? { ...s.pending, [id]: waiting.filter((p) => p.clientMsgId !== message.clientMsgId) }
            : s.pending,
          conversations,
          conversationOrder:
            conversations === s.conversations ? s.conversationOrder : sortConversationIds(conversations),
        };
      });
    }

    /** A fetched page can hold messages newer than the list entry knows of. */
    function touchConversation(conversationId: number): void {
      const newest = get().messages[conversationId]?.items.at(-1);
      const conversation = get().conversations[conversationId];
      if (!newest || !conversation) return;
      const updated = withMessage(conversation, newest);
      if (updated === conversation) return;
      set((s) => {
        const conversations = { ...s.conversations, [conversationId]: updated };
        return { conversations, conversationOrder: sortConversationIds(conversations) };
      });
    }

    function dropPending(conversationId: number, clientMsgId: string): void {
      set((s) => {
        const waiting = s.pending[conversationId];
        if (!waiting?.some((p) => p.clientMsgId === clientMsgId)) return {};
        return { pending: { ...s.pending, [conversationId]: waiting.filter((p) => p.clientMsgId !== clientMsgId) } };
      });
    }

    function setSendError(conversationId: number, message: string): void {
      set((s) => ({ sendErrors: { ...s.sendErrors, [conversationId]: message } }));
    }

    return {
      messages: {},
      pending: {},
      sendErrors: {},

      async loadLatest(conversationId) {
        if (get().messages[conversationId]?.loading) return;
        patchList(conversationId, () => ({ loading: true, error: null }));
        const generation = rt.generation;
        const res = await fetchPage(conversationId, { limit: PAGE_SIZE });
        if (generation !== rt.generation) return;
        if (!res.ok) {
          patchList(conversationId, () => ({ loading: false, error: res.error.message }));
          return;
        }
        const page = res.messages;
        const full = page.length >= PAGE_SIZE;
        patchList(conversationId, (list) => {
          const oldest = page[0]?.seq;
          // Pushes older than a full page would leave a hole that "load older" could never fill.
          const kept = full && oldest !== undefined ? list.items.filter((m) => m.seq >= oldest) : list.items;
          const items = mergeMessages(kept, page);
          return {
            items,
            tailSeq: extendTail(items, page.at(-1)?.seq ?? 0),
            loaded: true,
            loading: false,
            hasMore: full,
            error: null,
          };
        });
        touchConversation(conversationId);
        afterLoad(conversationId);
      },

      async loadOlder(conversationId) {
        const list = get().messages[conversationId];
        if (!list?.loaded || list.loading || !list.hasMore) return;
        const oldest = list.items[0]?.seq;
        if (oldest === undefined) {
          patchList(conversationId, () => ({ hasMore: false }));
          return;
        }
        patchList(conversationId, () => ({ loading: true, error: null }));
        const generation = rt.generation;
        const res = await fetchPage(conversationId, { before: oldest, limit: PAGE_SIZE });
        if (generation !== rt.generation) return;
        if (!res.ok) {
          patchList(conversationId, () => ({ loading: false, error: res.error.message }));
          return;
        }
        patchList(conversationId, (l) => ({
          items: mergeMessages(l.items, res.messages),
          hasMore: res.messages.length >= PAGE_SIZE,
          loading: false,
        }));
        afterLoad(conversationId);
      },

      async catchUp(conversationId) {
        const list = get().messages[conversationId];
        if (!list?.loaded) {
          await get().loadLatest(conversationId);
          return;
        }
        if (list.loading) return;
        const target = latestSeq(get(), conversationId);
        if (target - list.tailSeq > MAX_CATCH_UP) {
          set((s) => ({ messages: { ...s.messages, [conversationId]: EMPTY_LIST } }));
          await get().loadLatest(conversationId);
          return;
        }

        patchList(conversationId, () => ({ loading: true, error: null }));
        const generation = rt.generation;
        let after = list.tailSeq;
        for (;;) {
          const res = await fetchPage(conversationId, { after, limit: CATCH_UP_PAGE });
          if (generation !== rt.generation) return;
          if (!res.ok) {
            patchList(conversationId, () => ({ loading: false, error: res.error.message }));
            return;
          }
          const page = res.messages;
          patchList(conversationId, (l) => ({ items: mergeMessages(l.items, page) }));
          const newest = page.at(-1)?.seq ?? after;
          if (page.length < CATCH_UP_PAGE || newest <= after) {
            after = newest;
            break;
          }
          after = newest;
        }
        // The server returned everything up to its present, which is at least what this client knew of.
        patchList(conversationId, (l) => ({
          loading: false,
          tailSeq: extendTail(l.items, Math.max(l.tailSeq, target, after)),
        }));
        touchConversation(conversationId);
        afterLoad(conversationId);
      },

      refreshMessages(conversationId) {
        const list = get().messages[conversationId];
        if (!list?.loaded) {
          if (!list?.loading) void get().loadLatest(conversationId);
          return;
        }
        if (!list.loading && latestSeq(get(), conversationId) > list.tailSeq) void get().catchUp(conversationId);
      },

      async sendMessage(conversationId, content) {
        const text = content.trim();
        if (!text) return false;
        const clientMsgId = rt.deps.newId();
        const generation = rt.generation;
        set((s) => {
          const sendErrors = { ...s.sendErrors };
          delete sendErrors[conversationId];
          const waiting = s.pending[conversationId] ?? [];
          const item = { clientMsgId, content: text, createdAt: new Date().toISOString() };
          return { sendErrors, pending: { ...s.pending, [conversationId]: [...waiting, item] } };
        });

        for (let attempt = 0; attempt < SEND_ATTEMPTS; attempt++) {
          if (attempt > 0) await sleep(rt.deps.retryDelayMs);
          if (generation !== rt.generation) return false;
          let res;
          try {
            // The same clientMsgId on every attempt lets the server store the message at most once.
            res = await rt.deps.transport.send({ conversationId, clientMsgId, content: text });
          } catch {
            continue;
          }
          if (generation !== rt.generation) return false;
          if (res.ok) {
            ingest(res.message);
            dropPending(conversationId, clientMsgId);
            return true;
          }
          dropPending(conversationId, clientMsgId);
          setSendError(conversationId, res.error.message);
          return false;
        }
        if (generation !== rt.generation) return false;
        dropPending(conversationId, clientMsgId);
        setSendError(conversationId, NO_ANSWER_MESSAGE);
        return false;
      },

      receiveMessage(message) {
        const id = message.conversationId;
        // Sent just before the conversation went away; it must not come back for it.
        if (rt.removed.has(id)) return;
        ingest(message);
        if (!get().conversations[id]) {
          if (!rt.sync.wanted.has(id)) rt.sync.wanted.set(id, rt.sync.token + 1);
          get().requestSync();
          return;
        }
        if (get().activeConversationId === id) {
          get().refreshMessages(id);
          get().readIfActive(id);
        }
      },

      clearSendError(conversationId) {
        if (get().sendErrors[conversationId] === undefined) return;
        set((s) => {
          const sendErrors = { ...s.sendErrors };
          delete sendErrors[conversationId];
          return { sendErrors };
        });
      },
    };
  };
}
