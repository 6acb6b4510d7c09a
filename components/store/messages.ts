import type { StateCreator } from "zustand/vanilla";
import type { ErrorCode, MessageDTO, MessagesResponse, Result } from "@/server/contracts";
import { sortConversationIds, withMessage } from "./conversations";
import { readDraft, writeDraft } from "./drafts";
import { asKnown, latestSeq, NO_ANSWER, OFFLINE, type StoreRuntime } from "./runtime";
import { readQueue, writeQueue, type SavedItem, type SavedQueue } from "./saved-queue";
import type { ChatState, MessageList, MessagesQuery, MessagesSlice, PendingMessage } from "./types";

export const PAGE_SIZE = 50;
export const CATCH_UP_PAGE = 200;
/** Beyond this many missed messages, reloading the newest page is cheaper than replaying them all. */
export const MAX_CATCH_UP = 1000;
/** The longest pause between two attempts at a send that failed for a passing reason. */
export const MAX_SEND_RETRY_MS = 30_000;
export const NO_ANSWER_MESSAGE = "The server has not answered yet; trying again.";
/** Refusals that may pass by themselves; any other refusal waits for the person (retry or discard). */
const TRANSIENT: ReadonlySet<ErrorCode> = new Set<ErrorCode>(["unavailable", "rate_limited"]);

export const EMPTY_LIST: MessageList = {
  items: [],
  tailSeq: 0,
  loaded: false,
  loading: false,
  hasMore: false,
  error: null,
  offline: false,
};

/**
 * Ascending by seq; a message already present (same seq or id) is kept as is, unless what comes says it was deleted
 * since (a deleted message stays deleted, whatever older copy arrives after). Returns `existing` if unchanged.
 */
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
    const present = bySeq.get(message.seq);
    if (present?.id === message.id && message.deleted && !present.deleted) {
      bySeq.set(message.seq, message);
      changed = true;
      continue;
    }
    if (present || ids.has(message.id)) continue;
    bySeq.set(message.seq, message);
    ids.add(message.id);
    changed = true;
  }
  if (!changed) return existing;
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

/**
 * The pending messages of the conversations in `conversations` (a snapshot's): one the user is no longer in has
 * nowhere to go, so its messages leave the screen and, at their turn, the queue, as after conversation:removed.
 */
export function pendingWithin(
  pending: Record<number, PendingMessage[]>,
  isMember: (conversationId: number) => boolean,
): Record<number, PendingMessage[]> {
  const gone = Object.keys(pending).filter((id) => !isMember(Number(id)));
  if (gone.length === 0) return pending;
  const kept = { ...pending };
  for (const id of gone) delete kept[Number(id)];
  return kept;
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
  return (set, get, store) => {
    // Every change of `pending` (a send, an acknowledgement, a refusal, a discard, a conversation gone) is saved for
    // the reload of this tab. Sign-out and an expired session clear `pending` together with `user`: that saves
    // nothing, so the queue waits in this tab for the same user's next sign-in (docs/protocol.md).
    store.subscribe((state, prev) => {
      const userId = state.user?.id;
      if (state.pending !== prev.pending && userId !== undefined && userId === prev.user?.id) {
        writeQueue(rt.deps.queueStorage, userId, savedQueue(state.pending));
      }
    });

    /**
     * The queue as saved: refused items keep their place on screen; the waiting ones are sent in the queue's order,
     * and one not in the queue yet (written or retried this moment) goes last, where it is about to be put.
     */
    function savedQueue(pending: Record<number, PendingMessage[]>): SavedQueue {
      const items: SavedItem[] = [];
      const waiting = new Set<string>();
      for (const [id, list] of Object.entries(pending)) {
        for (const p of list) {
          const refused = p.status === "refused" ? (p.error ?? "") : null;
          items.push({
            conversationId: Number(id),
            clientMsgId: p.clientMsgId,
            content: p.content,
            createdAt: p.createdAt,
            refused,
          });
          if (refused === null) waiting.add(p.clientMsgId);
        }
      }
      const order = rt.outbox.queue.map((q) => q.clientMsgId).filter((id) => waiting.delete(id));
      return { items, order: [...order, ...waiting] };
    }

    function patchList(conversationId: number, patch: (list: MessageList) => Partial<MessageList>): void {
      set((s) => {
        const list = s.messages[conversationId] ?? EMPTY_LIST;
        return { messages: { ...s.messages, [conversationId]: { ...list, ...patch(list) } } };
      });
    }

    /** A load of `conversationId`'s messages failed; whether the connection was down then decides what is said. */
    function failed(conversationId: number, error: string): void {
      patchList(conversationId, () => ({ loading: false, error, offline: !get().connected }));
    }

    /**
     * A page of history; the members who left, and those added later, come with every page and replace what the tab
     * knew of them.
     */
    async function fetchPage(conversationId: number, query: MessagesQuery): Promise<Result<MessagesResponse>> {
      const generation = rt.generation;
      const fetched = await rt.deps.transport.fetchMessages(conversationId, query).catch(unavailable);
      // A page read before a deletion this tab heard of shows it deleted all the same.
      const res = fetched.ok ? { ...fetched, messages: fetched.messages.map((m) => asKnown(rt, m)) } : fetched;
      const left = res.ok ? res.left : undefined;
      const added = res.ok ? res.added : undefined;
      if (generation === rt.generation && !rt.removed.has(conversationId)) {
        if (left) set((s) => ({ left: { ...s.left, [conversationId]: left } }));
        if (added) set((s) => ({ added: { ...s.added, [conversationId]: added } }));
      }
      return res;
    }

    /** After a successful load the open conversation may still be behind, or may now have more to read. */
    function afterLoad(conversationId: number): void {
      if (get().activeConversationId !== conversationId) return;
      get().refreshMessages(conversationId);
      get().readIfActive(conversationId);
    }

    function ingest(pushed: MessageDTO): void {
      const message = asKnown(rt, pushed);
      const id = message.conversationId;
      if (rt.removed.has(id)) return;
      // clientMsgIds are unique per sender only: another member's message is never one of ours.
      const own = message.senderId === get().user?.id;
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
          // The push of a queued message can overtake its acknowledgement (and a refused retry can have been stored).
          pending:
            own && waiting?.some((p) => p.clientMsgId === message.clientMsgId)
              ? { ...s.pending, [id]: waiting.filter((p) => p.clientMsgId !== message.clientMsgId) }
              : s.pending,
          conversations,
          conversationOrder:
            conversations === s.conversations ? s.conversationOrder : sortConversationIds(conversations),
        };
      });
      // Stored by an attempt whose acknowledgement never came: the queue must not send it again.
      if (own && rt.outbox.queue.some((q) => q.clientMsgId === message.clientMsgId)) {
        leaveQueue(message.clientMsgId);
        settle(message.clientMsgId, true);
      }
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

    function findPending(conversationId: number, clientMsgId: string): PendingMessage | undefined {
      return get().pending[conversationId]?.find((p) => p.clientMsgId === clientMsgId);
    }

    function patchPending(
      conversationId: number,
      clientMsgId: string,
      patch: (item: PendingMessage) => Partial<PendingMessage>,
    ): void {
      set((s) => {
        const waiting = s.pending[conversationId];
        if (!waiting?.some((p) => p.clientMsgId === clientMsgId)) return {};
        const next = waiting.map((p) => (p.clientMsgId === clientMsgId ? { ...p, ...patch(p) } : p));
        return { pending: { ...s.pending, [conversationId]: next } };
      });
    }

    function settle(clientMsgId: string, stored: boolean): void {
      const resolve = rt.outbox.settle.get(clientMsgId);
      rt.outbox.settle.delete(clientMsgId);
      resolve?.(stored);
    }

    function leaveQueue(clientMsgId: string): void {
      rt.outbox.queue = rt.outbox.queue.filter((q) => q.clientMsgId !== clientMsgId);
    }

    /** Sends the oldest queued message, if connected, nothing is on the wire and no backoff is running. */
    function pump(): void {
      const box = rt.outbox;
      if (box.busy || box.retryTimer || !get().connected) return;
      for (;;) {
        const next = box.queue[0];
        if (!next) return;
        const item = findPending(next.conversationId, next.clientMsgId);
        if (item && item.status !== "refused") {
          void attempt(next.conversationId, item);
          return;
        }
        // Its conversation went away (leave, delete): the message has nowhere to go.
        box.queue.shift();
        settle(next.clientMsgId, false);
      }
    }

    async function attempt(conversationId: number, item: PendingMessage): Promise<void> {
      const box = rt.outbox;
      const { clientMsgId } = item;
      const generation = rt.generation;
      box.busy = true;
      patchPending(conversationId, clientMsgId, () => ({ status: "sending" }));
      let res: Awaited<ReturnType<typeof rt.deps.transport.send>> | null;
      try {
        // Every attempt carries the message's own clientMsgId, so the server stores it at most once.
        res = await rt.deps.transport.send({ conversationId, clientMsgId, content: item.content });
      } catch {
        res = null; // No acknowledgement: the outcome is unknown, so the message stays queued.
      }
      if (generation !== rt.generation) return;
      box.busy = false;

      if (res?.ok) {
        box.failures = 0;
        leaveQueue(clientMsgId);
        ingest(res.message);
        dropPending(conversationId, clientMsgId);
        settle(clientMsgId, true);
      } else if (res && (!TRANSIENT.has(res.error.code) || (res.error.retryAfterMs ?? 0) > MAX_SEND_RETRY_MS)) {
        // A refusal that does not pass by itself soon (a rate limit of minutes: too many people mentioned) is the
        // person's call, retry or discard, and must not hold up the rest of the queue meanwhile.
        leaveQueue(clientMsgId);
        const error = res.error.message;
        patchPending(conversationId, clientMsgId, () => ({ status: "refused", error }));
        settle(clientMsgId, false);
      } else {
        box.failures += 1;
        // Offline, the banner says why; a note on the message would only go stale.
        const error = get().connected ? (res?.error.message ?? NO_ANSWER_MESSAGE) : null;
        patchPending(conversationId, clientMsgId, () => ({ status: "queued", error }));
        const backoff = Math.min(rt.deps.retryDelayMs * 2 ** (box.failures - 1), MAX_SEND_RETRY_MS);
        const delay = res?.ok === false ? (res.error.retryAfterMs ?? backoff) : backoff;
        box.retryTimer = setTimeout(() => {
          box.retryTimer = null;
          pump();
        }, delay);
        return;
      }
      pump();
    }

    return {
      messages: {},
      left: {},
      added: {},
      pending: {},

      async loadLatest(conversationId) {
        if (get().messages[conversationId]?.loading) return;
        patchList(conversationId, () => ({ loading: true, error: null }));
        const generation = rt.generation;
        const res = await fetchPage(conversationId, { limit: PAGE_SIZE });
        if (generation !== rt.generation) return;
        if (!res.ok) {
          failed(conversationId, res.error.message);
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
            offline: false,
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
          failed(conversationId, res.error.message);
          return;
        }
        patchList(conversationId, (l) => ({
          items: mergeMessages(l.items, res.messages),
          hasMore: res.messages.length >= PAGE_SIZE,
          loading: false,
        }));
        afterLoad(conversationId);
      },

      async catchUp(conversationId, recheck = false) {
        const list = get().messages[conversationId];
        if (!list?.loaded) {
          await get().loadLatest(conversationId);
          return;
        }
        if (list.loading) {
          // Checked when it is next shown (or refreshed), once this load is over.
          if (recheck) rt.recheck.add(conversationId);
          return;
        }
        const target = latestSeq(get(), conversationId);
        if (target - list.tailSeq > MAX_CATCH_UP) {
          set((s) => ({ messages: { ...s.messages, [conversationId]: EMPTY_LIST } }));
          await get().loadLatest(conversationId);
          return;
        }

        patchList(conversationId, () => ({ loading: true, error: null }));
        const generation = rt.generation;
        let after = recheck ? Math.max(0, list.tailSeq - PAGE_SIZE) : list.tailSeq;
        for (;;) {
          const res = await fetchPage(conversationId, { after, limit: CATCH_UP_PAGE });
          if (generation !== rt.generation) return;
          if (!res.ok) {
            failed(conversationId, res.error.message);
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
        if (list.loading) return;
        if (rt.recheck.delete(conversationId)) void get().catchUp(conversationId, true);
        else if (latestSeq(get(), conversationId) > list.tailSeq) void get().catchUp(conversationId);
      },

      sendMessage(conversationId, content) {
        const text = content.trim();
        if (!text) return Promise.resolve(false);
        const clientMsgId = rt.deps.newId();
        const item: PendingMessage = {
          clientMsgId,
          content: text,
          createdAt: new Date().toISOString(),
          status: "queued",
          error: null,
        };
        set((s) => ({ pending: { ...s.pending, [conversationId]: [...(s.pending[conversationId] ?? []), item] } }));
        // Accepted into the queue: the draft has become this message.
        get().saveDraft(conversationId, "");
        const stored = new Promise<boolean>((resolve) => rt.outbox.settle.set(clientMsgId, resolve));
        rt.outbox.queue.push({ conversationId, clientMsgId });
        pump();
        return stored;
      },

      retryPending(conversationId, clientMsgId) {
        if (findPending(conversationId, clientMsgId)?.status !== "refused") return;
        patchPending(conversationId, clientMsgId, () => ({ status: "queued", error: null }));
        rt.outbox.queue.push({ conversationId, clientMsgId });
        pump();
      },

      discardPending(conversationId, clientMsgId) {
        // Only a refused message: one that may be on its way could be stored after all.
        if (findPending(conversationId, clientMsgId)?.status !== "refused") return;
        dropPending(conversationId, clientMsgId);
      },

      resumeSending() {
        const box = rt.outbox;
        if (box.retryTimer) clearTimeout(box.retryTimer);
        box.retryTimer = null;
        box.failures = 0;
        set((s) => {
          let changed = false;
          const pending: Record<number, PendingMessage[]> = {};
          for (const [id, items] of Object.entries(s.pending)) {
            const stale = items.some((p) => p.status !== "refused" && p.error !== null);
            changed ||= stale;
            pending[Number(id)] = stale
              ? items.map((p) => (p.status === "refused" ? p : { ...p, error: null }))
              : items;
          }
          return changed ? { pending } : {};
        });
        pump();
      },

      restoreQueue() {
        const userId = get().user?.id;
        if (userId === undefined) return;
        const saved = readQueue(rt.deps.queueStorage, userId);
        const known = new Set(Object.values(get().pending).flatMap((list) => list.map((p) => p.clientMsgId)));
        const fresh = saved.items.filter(
          (item) => !known.has(item.clientMsgId) && !rt.removed.has(item.conversationId),
        );
        if (fresh.length === 0) return;
        // Queued first, so the save that follows the change of `pending` keeps the order.
        const waiting = new Map(fresh.filter((item) => item.refused === null).map((item) => [item.clientMsgId, item]));
        for (const clientMsgId of [...saved.order, ...waiting.keys()]) {
          const item = waiting.get(clientMsgId);
          if (!item) continue;
          waiting.delete(clientMsgId);
          rt.outbox.queue.push({ conversationId: item.conversationId, clientMsgId });
        }
        set((s) => {
          const pending = { ...s.pending };
          for (const item of fresh) {
            const restored: PendingMessage = {
              clientMsgId: item.clientMsgId,
              content: item.content,
              createdAt: item.createdAt,
              status: item.refused === null ? "queued" : "refused",
              error: item.refused,
            };
            pending[item.conversationId] = [...(pending[item.conversationId] ?? []), restored];
          }
          return { pending };
        });
        // The one that was on the wire at the reload goes again with its clientMsgId: stored at most once.
        pump();
      },

      draftOf(conversationId) {
        const userId = get().user?.id;
        return userId === undefined ? "" : readDraft(rt.deps.drafts, userId, conversationId);
      },

      saveDraft(conversationId, text) {
        const userId = get().user?.id;
        if (userId !== undefined) writeDraft(rt.deps.drafts, userId, conversationId, text);
      },

      async deleteMessage(messageId) {
        // Refused at once rather than queued: the person is looking at the message they want gone.
        if (!get().connected) return OFFLINE;
        try {
          const res = await rt.deps.transport.deleteMessage({ messageId });
          if (!res.ok) return res.error.message;
          get().receiveDeleted(res.message);
          return null;
        } catch {
          // Unknown outcome: had it been deleted, its message:deleted reaches every tab anyway.
          return NO_ANSWER;
        }
      },

      receiveDeleted(message) {
        if (!message.deleted) return;
        rt.deletedIds.add(message.id);
        if (rt.removed.has(message.conversationId)) return;
        set((s) => {
          const id = message.conversationId;
          const list = s.messages[id];
          // Only a copy this tab holds turns deleted: one outside the pages it loaded comes with them when they load.
          const items = list?.items.some((m) => m.id === message.id) ? mergeMessages(list.items, [message]) : null;
          const conversation = s.conversations[id];
          const updated =
            conversation?.lastMessage?.id === message.id ? withMessage(conversation, message) : conversation;
          if ((!items || items === list!.items) && updated === conversation) return s;
          return {
            messages: items && items !== list!.items ? { ...s.messages, [id]: { ...list!, items } } : s.messages,
            conversations: updated !== conversation ? { ...s.conversations, [id]: updated! } : s.conversations,
          };
        });
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
    };
  };
}
