import type { StateCreator } from "zustand/vanilla";
import type {
  ConversationDTO,
  ConversationRemoval,
  ConversationPage,
  ListCursor,
  MemberAdded,
  MessageDTO,
  Result,
  UnreadUpdate,
  UserDTO,
} from "@/server/contracts";
import { createReadCursor, type ReadCursor } from "./read-cursor";
import { badgeShare, isBeingRead, latestSeq, NO_ANSWER, rowAsKnown, type StoreRuntime } from "./runtime";
import type { ChatState, ConversationsSlice, GoneNoticeState } from "./types";

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
  const last = conversation.lastMessage;
  // The same message again: news only if it was deleted since (a deleted one stays deleted).
  if (message.seq === conversation.lastSeq && last?.id === message.id && (last.deleted || !message.deleted)) {
    return conversation;
  }
  return { ...conversation, lastSeq: message.seq, lastMessage: message };
}

export const initialConversationsState = {
  conversations: {},
  conversationOrder: [],
  activeConversationId: null,
  goneNotice: null,
  readRequested: {},
  seenSeq: {},
  conversationErrors: {},
  moreConversations: false,
  listEnd: null,
  loadingConversations: false,
  conversationsError: null,
} satisfies Partial<ConversationsSlice>;

/** Where the list continues after `conversation`: its last activity as the server orders by it, and its id. */
export function listCursor(conversation: ConversationDTO): ListCursor {
  return { at: conversation.lastMessage?.createdAt ?? conversation.createdAt, id: conversation.id };
}

function without<T>(record: Record<number, T>, id: number): Record<number, T> {
  if (!(id in record)) return record;
  const copy = { ...record };
  delete copy[id];
  return copy;
}

/** The notice for the open conversation removed by a push: its title, and how as far as the push says. */
function goneNoticeOf(
  s: ChatState,
  conversationId: number,
  how: ConversationRemoval["how"] | undefined,
): GoneNoticeState {
  const conversation = s.conversations[conversationId];
  const memberName = (id: number) => conversation?.members.find((m) => m.id === id)?.name ?? null;
  return {
    title: conversation?.title ?? null,
    conversationKind: conversation?.kind ?? null,
    cause:
      how === undefined
        ? { kind: "unknown" }
        : how.reason === "left"
          ? { kind: "left" }
          : how.reason === "removed"
            ? { kind: "removed", by: memberName(how.by) }
            : { kind: "deleted", by: how.by === s.user?.id ? "you" : memberName(how.by) },
  };
}

export function createConversationsSlice(rt: StoreRuntime): StateCreator<ChatState, [], [], ConversationsSlice> {
  return (set, get) => {
    /** Leave and delete share everything but the request: on success the conversation goes at once. */
    async function dropOnServer(conversationId: number, request: Promise<Result>): Promise<string | null> {
      get().clearConversationError(conversationId);
      const generation = rt.generation;
      // Until its own removal below is done: the push may come before the answer or after it.
      rt.dropping.add(conversationId);
      try {
        const res = await request;
        if (generation !== rt.generation) return null;
        if (!res.ok) {
          set((s) => ({ conversationErrors: { ...s.conversationErrors, [conversationId]: res.error.message } }));
          if (res.error.code === "unavailable") rt.unreachable.add(conversationId);
          return res.error.message;
        }
        // The server pushes conversation:removed too, but this tab need not wait for it (nor lose it).
        get().removeConversation(conversationId);
        return null;
      } finally {
        rt.dropping.delete(conversationId);
      }
    }

    /**
     * Per group, the names this tab's adds in flight named (lower case): their push, which says nothing of who added
     * them and may come before the answer, makes no line; the answer does ("You added dave").
     */
    const adding = new Map<number, string[]>();

    /**
     * The conversation an add's or a removal's answer carries (see `updateConversation` for the lines of who came and
     * went): taken only while this tab still shows it (a deletion
     * or a leave elsewhere may have removed it since); null when the server could not describe it after the change
     * (the group deleted meanwhile, Redis away): a sync brings what is true.
     */
    function takeAnswer(conversationId: number, conversation: ConversationDTO | null): void {
      if (conversation === null) get().requestSync();
      else if (get().conversations[conversationId]) get().receiveConversation(conversation);
    }

    /**
     * "bob left", or "carol removed bob" (`by`), for members gone now; once each, but a line that did not say who
     * removed them (a push about another change came first) learns it from the removal's own push.
     */
    function noteLeft(conversationId: number, gone: UserDTO[], by: { id: number; name: string } | undefined): void {
      if (gone.length === 0) return;
      const at = new Date().toISOString();
      set((s) => {
        const before = s.left[conversationId] ?? [];
        const known = (m: UserDTO) => before.find((l) => l.userId === m.id);
        const fresh = gone.filter((m) => !known(m) || (by && !known(m)!.removedBy));
        if (fresh.length === 0) return {};
        const lines = fresh.map((m) => ({
          ...(known(m) ?? { userId: m.id, name: m.name, at }),
          ...(by ? { removedBy: by } : {}),
        }));
        const kept = before.filter((l) => !fresh.some((m) => m.id === l.userId));
        return { left: { ...s.left, [conversationId]: [...kept, ...lines] } };
      });
    }

    /** "carol added dave" (or "dave joined", `by` null); once each, a "joined" line learning who added them later. */
    function noteAdded(conversationId: number, come: UserDTO[], by: MemberAdded["by"], seq: number): void {
      if (come.length === 0) return;
      const at = new Date().toISOString();
      set((s) => {
        const before = s.added[conversationId] ?? [];
        const known = (m: UserDTO) => before.find((a) => a.userId === m.id);
        const fresh = come.filter((m) => !known(m) || (by && known(m)!.by === null));
        if (fresh.length === 0) return {};
        const lines = fresh.map((m) => ({ ...(known(m) ?? { userId: m.id, name: m.name, at }), seq, by }));
        const kept = before.filter((a) => !fresh.some((m) => m.id === a.userId));
        return { added: { ...s.added, [conversationId]: [...kept, ...lines] } };
      });
    }

    /** The mark this tab shows for the conversation, which a read names so that it cannot clear a newer one. */
    function shownMark(conversationId: number): number | undefined {
      const detail = get().unreadDetails[conversationId];
      return detail?.markedUnread ? detail.markVersion : undefined;
    }

    function acknowledgeRead(res: Result<{ unread: UnreadUpdate; changed: boolean }>): void {
      if (!res.ok) return;
      if (res.changed) get().applyUnread(res.unread);
      else get().probeUnread(res.unread);
    }

    function sendRead(conversationId: number, seq: number): void {
      const previous = get().readRequested[conversationId];
      if (seq <= (previous ?? 0)) return;
      set((s) => ({ readRequested: { ...s.readRequested, [conversationId]: seq } }));
      // A read names the mark only while the person looks at the conversation and the mark is not held: one sent
      // later (again after a reconnect, flushed as the window is left) must not clear a mark made since.
      const naming = isBeingRead(get(), conversationId) && !rt.markHeld.has(conversationId);
      const markVersion = naming ? shownMark(conversationId) : undefined;
      if (markVersion !== undefined && seq >= latestSeq(get(), conversationId)) {
        rt.markClears.set(conversationId, markVersion);
      }

      const generation = rt.generation;
      // A read that failed must not block the same seq forever; a newer request stays as it is.
      const rollBack = () => {
        if (generation !== rt.generation) return;
        // The mark this read meant to clear is still shown, so looking at the end again must clear it.
        if (markVersion !== undefined && rt.markClears.get(conversationId) === markVersion) {
          rt.markClears.delete(conversationId);
        }
        if (get().readRequested[conversationId] !== seq) return;
        set((s) => {
          const readRequested = { ...s.readRequested };
          if (previous === undefined) delete readRequested[conversationId];
          else readRequested[conversationId] = previous;
          return { readRequested };
        });
      };
      const input = markVersion === undefined ? { conversationId, seq } : { conversationId, seq, markVersion };
      rt.deps.transport.read(input).then((res) => {
        if (generation !== rt.generation) return;
        if (res.ok) acknowledgeRead(res);
        else rollBack();
      }, rollBack);
    }

    /**
     * A conversation marked unread is read to its end with nothing new to read: the cursor cannot move, so the read
     * of its last message is sent again, naming the mark. Nothing changes here until the server answers.
     */
    function clearMarkIfRead(conversationId: number, onScreenSeq: number): void {
      const markVersion = shownMark(conversationId);
      if (markVersion === undefined || rt.markHeld.has(conversationId)) return;
      const s = get();
      const last = latestSeq(s, conversationId);
      if (!isBeingRead(s, conversationId) || onScreenSeq < last) return;
      if ((rt.markClears.get(conversationId) ?? 0) >= markVersion) return;
      // A read still waiting for its debounce would overtake this one in the person's eyes; send it as well.
      if (last > (s.readRequested[conversationId] ?? 0)) return;
      rt.markClears.set(conversationId, markVersion);
      const generation = rt.generation;
      const retry = () => {
        if (generation === rt.generation && rt.markClears.get(conversationId) === markVersion) {
          rt.markClears.delete(conversationId);
        }
      };
      rt.deps.transport.read({ conversationId, seq: last, markVersion }).then((res) => {
        if (generation !== rt.generation) return;
        if (res.ok) acknowledgeRead(res);
        else retry();
      }, retry);
    }

    function cursorOf(conversationId: number): ReadCursor {
      let cursor = rt.cursors.get(conversationId);
      if (cursor) return cursor;
      cursor = createReadCursor(
        {
          debounceMs: rt.deps.readDebounceMs,
          floor: () => get().readRequested[conversationId] ?? 0,
          send: (seq) => sendRead(conversationId, seq),
          onSeen: (seq) =>
            set((s) => ({
              seenSeq: { ...s.seenSeq, [conversationId]: Math.max(seq, s.seenSeq[conversationId] ?? 0) },
            })),
        },
        get().seenSeq[conversationId] ?? 0,
      );
      rt.cursors.set(conversationId, cursor);
      return cursor;
    }

    /**
     * The highest seq the open conversation's list shows; with the list at its bottom, the newest loaded one.
     * Messages at or below the read cursor count too (they are read), so that with a list that shows nothing yet
     * a count arriving ahead of its message is still explained by that message.
     */
    function onScreen(conversationId: number): number {
      const view = rt.view;
      if (view?.conversationId !== conversationId) return 0;
      const s = get();
      const newest = view.following ? (s.messages[conversationId]?.items.at(-1)?.seq ?? 0) : 0;
      return Math.max(view.highestSeq, newest, s.readRequested[conversationId] ?? 0);
    }

    /** Another conversation (or none) is opened: what was seen in the previous one is sent now. */
    function leaveView(next: number | null): void {
      const previous = get().activeConversationId;
      if (previous === next) return;
      rt.view = null;
      if (previous !== null) {
        rt.cursors.get(previous)?.flush();
        rt.markHeld.delete(previous);
      }
    }

    return {
      ...initialConversationsState,
      visible: false,
      focused: false,

      async loadOlderConversations() {
        const s = get();
        const before = s.listEnd;
        if (!s.moreConversations || !before || s.loadingConversations || s.syncing) return;
        // The next page starts where the last one (or the sync's) ended, not at the oldest row the tab shows: a row
        // can come from elsewhere (an old direct conversation someone opened again) and sort after rows not listed.
        const generation = rt.generation;
        const token = rt.sync.token;
        // A sync since the request replaced the list this page would continue.
        const current = () => generation === rt.generation && token === rt.sync.token;
        set({ loadingConversations: true, conversationsError: null });
        let res: Result<ConversationPage>;
        try {
          res = await rt.deps.transport.listConversations({ before, limit: rt.deps.listPage });
        } catch {
          if (current()) set({ loadingConversations: false, conversationsError: NO_ANSWER });
          return;
        }
        if (!current()) return;
        if (!res.ok) {
          set({ loadingConversations: false, conversationsError: res.error.message });
          return;
        }
        const page = res;
        set((s) => {
          const conversations = { ...s.conversations };
          const readRequested = { ...s.readRequested };
          for (const fresh of page.conversations) {
            // Dropped by this tab (its removal's push may still be on the way), or already here, and then as new as
            // the pushes made it: the page's copy is not newer. Its counts are not taken either: the tab has every
            // conversation's from its snapshot and the pushes since, and the page's may be a version ahead.
            if (rt.removed.has(fresh.id) || conversations[fresh.id]) continue;
            conversations[fresh.id] = rowAsKnown(rt, fresh);
            readRequested[fresh.id] ??= fresh.lastReadSeq;
          }
          const end = page.conversations.at(-1);
          return {
            conversations,
            conversationOrder: sortConversationIds(conversations),
            readRequested,
            moreConversations: page.more && end !== undefined,
            listEnd: page.more && end ? listCursor(end) : null,
            loadingConversations: false,
          };
        });
      },

      openConversation(conversationId, how = "chosen") {
        // Reopened by a reload, not by the person: a mark on it stays until they open it themselves. The person
        // choosing the conversation already open (its row clicked) opens it on purpose: its mark is let go.
        if (how === "restored") rt.markHeld.add(conversationId);
        else if (get().activeConversationId === conversationId) rt.markHeld.delete(conversationId);
        leaveView(conversationId);
        set({ activeConversationId: conversationId, goneNotice: null });
        get().clearConversationError(conversationId);
        get().refreshMessages(conversationId);
        get().readIfActive(conversationId);
      },

      dismissGoneNotice() {
        if (get().goneNotice !== null) set({ goneNotice: null });
      },

      closeConversation() {
        leaveView(null);
        set({ activeConversationId: null, goneNotice: null });
      },

      async createConversation(input) {
        const generation = rt.generation;
        const res = await rt.deps.transport.createConversation(input);
        if (generation !== rt.generation) return null;
        if (!res.ok) return res.error.message;
        // Made, but not described after its commit (Redis away): the next sync lists it; there is nothing to open yet.
        if (res.conversation === null) {
          get().requestSync();
          return null;
        }
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

      removeConversation(conversationId, how) {
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
        rt.cursors.get(conversationId)?.cancel();
        rt.cursors.delete(conversationId);
        rt.markClears.delete(conversationId);
        rt.markHeld.delete(conversationId);
        rt.unreachable.delete(conversationId);
        if (rt.view?.conversationId === conversationId) rt.view = null;

        const counted = badgeShare(s, conversationId, false);
        const mentions = s.unreadDetails[conversationId]?.mentionCount ?? 0;
        // The open conversation going without this tab asking: say why the pane emptied.
        const goneNotice =
          s.activeConversationId === conversationId && !rt.dropping.has(conversationId)
            ? goneNoticeOf(s, conversationId, how)
            : s.goneNotice;
        set((s) => {
          const conversations = without(s.conversations, conversationId);
          return {
            conversations,
            conversationOrder:
              conversations === s.conversations
                ? s.conversationOrder
                : s.conversationOrder.filter((id) => id !== conversationId),
            activeConversationId: s.activeConversationId === conversationId ? null : s.activeConversationId,
            goneNotice,
            readRequested: without(s.readRequested, conversationId),
            seenSeq: without(s.seenSeq, conversationId),
            conversationErrors: without(s.conversationErrors, conversationId),
            messages: without(s.messages, conversationId),
            left: without(s.left, conversationId),
            added: without(s.added, conversationId),
            pending: without(s.pending, conversationId),
            unreadCounts: without(s.unreadCounts, conversationId),
            unreadDetails: without(s.unreadDetails, conversationId),
            // Its share leaves the totals in the same step as its row, so no badge ever disagrees with the rows.
            totalUnread: Math.max(0, s.totalUnread - counted),
            totalMentions: Math.max(0, s.totalMentions - mentions),
          };
        });
        // A snapshot already on its way may predate the removal and would bring the conversation back.
        if (get().syncing) get().requestSync(true);
        // The server's unread:changed that zeroes the count has not come (yet): the local totals are a guess.
        else if (counted > 0 || mentions > 0) get().requestSync();
      },

      clearConversationError(conversationId) {
        rt.unreachable.delete(conversationId);
        if (get().conversationErrors[conversationId] === undefined) return;
        set((s) => ({ conversationErrors: without(s.conversationErrors, conversationId) }));
      },

      updateConversation(conversation, change) {
        const known = get().conversations[conversation.id];
        if (!known) return;
        // Whom this change added or removed, and by whom: the member list may also show other changes made
        // meanwhile (a leave, another add), which are not credited to it.
        const removed = new Set(change && "removed" in change ? change.removed : []);
        const added = new Set(change && "added" in change ? change.added : []);
        // A group with fewer members: those gone left it now, or were removed by its creator (the conversation
        // leaving this user's own list would be conversation:removed).
        const staying = new Set(conversation.members.map((m) => m.id));
        const gone = conversation.kind === "group" ? known.members.filter((m) => !staying.has(m.id)) : [];
        noteLeft(
          conversation.id,
          gone.filter((m) => removed.has(m.id)),
          change?.by,
        );
        noteLeft(
          conversation.id,
          gone.filter((m) => !removed.has(m.id)),
          undefined,
        );
        // And more: those new were added now, by the change's author; someone else's add not named yet is said as
        // "joined" (this tab's own add in flight names its own: its answer says "You added").
        const had = new Set(known.members.map((m) => m.id));
        const come = conversation.kind === "group" ? conversation.members.filter((m) => !had.has(m.id)) : [];
        // Placed by the seq they joined at, which the push names (this tab's own may be a message ahead by now).
        const joinedAt = change && "seq" in change ? change.seq : known.lastSeq;
        if (change)
          noteAdded(
            conversation.id,
            come.filter((m) => added.has(m.id)),
            change.by,
            joinedAt,
          );
        const named = new Set((adding.get(conversation.id) ?? []).map((n) => n.toLowerCase()));
        const unnamed = come.filter((m) => !added.has(m.id) && !named.has(m.name.toLowerCase()));
        noteAdded(conversation.id, unnamed, null, known.lastSeq);
        // A line an earlier push made without saying who (it showed this change with another) learns it now.
        if (change) {
          const lefts = (get().left[conversation.id] ?? []).filter((l) => removed.has(l.userId));
          noteLeft(
            conversation.id,
            lefts.map((l) => ({ id: l.userId, name: l.name })),
            change.by,
          );
          const adds = (get().added[conversation.id] ?? []).filter((a) => added.has(a.userId));
          noteAdded(
            conversation.id,
            adds.map((a) => ({ id: a.userId, name: a.name })),
            change.by,
            joinedAt,
          );
        }
        get().receiveConversation(conversation);
      },

      async removeMember(conversationId, userId) {
        const generation = rt.generation;
        const known = get().conversations[conversationId];
        const res = await rt.deps.transport.removeMember(conversationId, userId);
        if (generation !== rt.generation) return null;
        if (!res.ok) return res.error.message;
        const me = get().user;
        const gone = known?.members.filter((m) => m.id === userId) ?? [];
        noteLeft(conversationId, gone, me ? { id: me.id, name: me.name } : undefined);
        takeAnswer(conversationId, res.conversation);
        return null;
      },

      async addMembers(conversationId, memberNames) {
        const generation = rt.generation;
        const known = get().conversations[conversationId];
        adding.set(conversationId, [...(adding.get(conversationId) ?? []), ...memberNames]);
        let res: Awaited<ReturnType<typeof rt.deps.transport.addMembers>>;
        try {
          res = await rt.deps.transport.addMembers(conversationId, { memberNames });
        } finally {
          const rest = adding.get(conversationId) ?? [];
          for (const n of memberNames) rest.splice(rest.indexOf(n), 1);
          if (rest.length === 0) adding.delete(conversationId);
        }
        if (generation !== rt.generation) return null;
        if (!res.ok) return res.error.message;
        const me = get().user;
        // Those this call named who were not members before it (its push may have merged them already).
        const had = new Set(known?.members.map((m) => m.id) ?? []);
        const named = new Set(memberNames.map((n) => n.toLowerCase()));
        const members = res.conversation?.members ?? [];
        const come = members.filter((m) => !had.has(m.id) && named.has(m.name.toLowerCase()));
        const seq = known?.lastSeq ?? res.conversation?.lastSeq ?? 0;
        noteAdded(conversationId, come, me ? { id: me.id, name: me.name } : null, seq);
        takeAnswer(conversationId, res.conversation);
        return null;
      },

      receiveConversation(conversation) {
        // Gone from this tab for good: ids are never reused and a membership, once ended, never comes back, so a
        // conversation:created that comes after its conversation:removed (someone added as the group was deleted)
        // is late, not news.
        if (rt.removed.has(conversation.id)) return;
        const known = get().conversations[conversation.id] !== undefined;
        set((s) => {
          const known = s.conversations[conversation.id];
          const merged =
            known && known.lastSeq > conversation.lastSeq
              ? { ...conversation, lastSeq: known.lastSeq, lastMessage: known.lastMessage }
              : rowAsKnown(rt, conversation);
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
        if (active === null) return;
        // Looking away (another tab, a reload, the tab closed): what was seen goes now, not after the page is gone.
        if (!visible) rt.cursors.get(active)?.flush();
        get().readIfActive(active);
      },

      setFocused(focused) {
        if (get().focused === focused) return;
        set({ focused });
        const active = get().activeConversationId;
        if (active === null) return;
        if (!focused) rt.cursors.get(active)?.flush();
        get().readIfActive(active);
      },

      setOnScreen(conversationId, view) {
        if (view === null) {
          if (rt.view?.conversationId !== conversationId) return;
          rt.view = null;
          rt.cursors.get(conversationId)?.flush();
          return;
        }
        if (get().activeConversationId !== conversationId) return;
        rt.view = { conversationId, ...view };
        get().readIfActive(conversationId);
      },

      readIfActive(conversationId) {
        const state = get();
        if (state.activeConversationId !== conversationId) return;
        const seq = onScreen(conversationId);
        cursorOf(conversationId).observe({ attending: isBeingRead(state, conversationId), onScreen: seq });
        clearMarkIfRead(conversationId, seq);
      },
    };
  };
}
