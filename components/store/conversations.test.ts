import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ConversationDTO } from "@/server/contracts";
import { compareConversations } from "./conversations";
import { BOB, conversation, flush, message, ME, setup, snapshot, update } from "./fake-transport";
import { selectShownTotal, selectShownUnread } from "./selectors";
import type { ChatStoreDeps } from "./types";

// Fake timers: a test moves time itself (flush() by a few ms), so no outcome depends on the machine's speed.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

async function synced(conversations: ConversationDTO[], version = 1, options: Partial<ChatStoreDeps> = {}) {
  const t = setup(options);
  t.transport.auto.fetchMessages = () => ({ ok: true, messages: [] });
  t.store.getState().requestSync();
  t.transport.syncs[0]?.resolve(snapshot(conversations, version));
  await flush();
  t.transport.syncs.length = 0;
  return t;
}

/** The user is looking at the tab. */
function attend(t: Awaited<ReturnType<typeof synced>>) {
  t.store.getState().setVisible(true);
  t.store.getState().setFocused(true);
}

describe("conversation order", () => {
  it("puts the latest activity first, a conversation without messages at its creation time, ties newest id first", () => {
    const list = [
      conversation(1),
      conversation(2, { lastSeq: 3 }),
      conversation(3),
      conversation(4, { lastSeq: 9 }),
      conversation(5, { lastSeq: 3 }),
    ];
    expect(list.sort(compareConversations).map((c) => c.id)).toEqual([4, 5, 2, 3, 1]);
  });

  it("sorts a conversation without messages by its creation time, above older activity", () => {
    const at = (iso: string) => `${iso}T12:00:00.000Z`;
    const list = [
      conversation(1, { lastSeq: 2, lastMessage: message(1, 2, { createdAt: at("2030-01-02") }) }),
      conversation(2, { createdAt: at("2030-01-03") }),
      conversation(3, { lastSeq: 1, lastMessage: message(3, 1, { createdAt: at("2030-01-04") }) }),
      conversation(4, { createdAt: at("2030-01-01") }),
    ];
    expect(list.sort(compareConversations).map((c) => c.id)).toEqual([3, 2, 1, 4]);
  });

  it("puts a conversation the user creates at the top, above conversations with newer ids and old messages", async () => {
    const t = await synced([conversation(1, { lastSeq: 5 }), conversation(9, { lastSeq: 1 })]);
    expect(t.store.getState().conversationOrder).toEqual([1, 9]);
    const creating = t.store.getState().createConversation({ memberNames: [BOB.name] });
    // The server's ids need not grow with time (here 4 < 9): the creation time decides.
    t.transport.creates[0]?.resolve({
      ok: true,
      conversation: conversation(4, { createdAt: "2030-06-01T00:00:00.000Z" }),
    });
    expect(await creating).toBeNull();
    expect(t.store.getState().conversationOrder).toEqual([4, 1, 9]);
  });

  it("puts a conversation:created from someone else at the top; its first message keeps it there", async () => {
    const t = await synced([conversation(1, { lastSeq: 5 }), conversation(9, { lastSeq: 1 })]);
    t.store.getState().receiveConversation(conversation(4, { createdAt: "2030-06-01T00:00:00.000Z" }));
    expect(t.store.getState().conversationOrder).toEqual([4, 1, 9]);
    t.store.getState().receiveMessage(message(1, 6, { createdAt: "2030-06-01T00:00:01.000Z" }));
    expect(t.store.getState().conversationOrder).toEqual([1, 4, 9]);
    t.store.getState().receiveMessage(message(4, 1, { createdAt: "2030-06-01T00:00:02.000Z" }));
    expect(t.store.getState().conversationOrder).toEqual([4, 1, 9]);
  });

  it("moves a conversation to the top on message:new and updates its last message", async () => {
    const t = await synced([conversation(1, { lastSeq: 5 }), conversation(2, { lastSeq: 2 })]);
    expect(t.store.getState().conversationOrder).toEqual([1, 2]);
    const m = message(2, 3, { createdAt: "2030-01-01T00:00:00.000Z" });
    t.store.getState().receiveMessage(m);
    const s = t.store.getState();
    expect(s.conversationOrder).toEqual([2, 1]);
    expect(s.conversations[2]).toMatchObject({ lastSeq: 3, lastMessage: m });
  });

  it("keeps the newer last message when an older one arrives late", async () => {
    const t = await synced([conversation(1, { lastSeq: 5 })]);
    t.store.getState().receiveMessage(message(1, 4));
    expect(t.store.getState().conversations[1]?.lastMessage?.seq).toBe(5);
  });

  it("adds a conversation:created and syncs for a message in an unknown conversation", async () => {
    const t = await synced([conversation(1)]);
    t.store.getState().receiveConversation(conversation(7, { title: "new" }));
    expect(t.store.getState().conversationOrder).toEqual([7, 1]);

    t.store.getState().receiveMessage(message(8, 1));
    expect(t.transport.syncs).toHaveLength(1);
    t.transport.syncs[0]?.resolve(
      snapshot([conversation(1), conversation(7), conversation(8, { lastSeq: 1, unreadCount: 1 })], 2),
    );
    await flush();
    expect(t.store.getState().conversations[8]).toBeDefined();
    expect(t.store.getState().totalUnread).toBe(1);
    expect(t.transport.syncs).toHaveLength(1);
  });

  it("syncs once more when the snapshot predates the unknown conversation, then gives up", async () => {
    const t = await synced([conversation(1)]);
    t.store.getState().requestSync();
    t.store.getState().receiveMessage(message(8, 1));
    expect(t.transport.syncs).toHaveLength(1);
    t.transport.syncs[0]?.resolve(snapshot([conversation(1)], 1));
    await flush();
    expect(t.transport.syncs).toHaveLength(2);
    t.transport.syncs[0]?.resolve(snapshot([conversation(1)], 1));
    await flush();
    expect(t.transport.syncs).toHaveLength(2);
  });

  it("keeps a conversation:created that overtook a snapshot taken before it", async () => {
    const t = await synced([conversation(1)]);
    t.store.getState().requestSync();
    t.store.getState().receiveConversation(conversation(7, { title: "new" }));
    t.transport.syncs[0]?.resolve(snapshot([conversation(1)], 1));
    await flush();
    expect(t.store.getState().conversationOrder).toEqual([7, 1]);
    expect(t.transport.syncs).toHaveLength(2);
    t.transport.syncs[1]?.resolve(snapshot([conversation(1), conversation(7, { title: "new" })], 1));
    await flush();
    expect(t.store.getState()).toMatchObject({ syncing: false, conversationOrder: [7, 1] });
  });

  it("opens a created conversation and reports the server's error otherwise", async () => {
    const t = await synced([]);
    const failing = t.store.getState().createConversation({ memberNames: ["nobody"] });
    t.transport.creates[0]?.resolve({ ok: false, error: { code: "not_found", message: "Unknown user: nobody" } });
    expect(await failing).toBe("Unknown user: nobody");

    const creating = t.store.getState().createConversation({ memberNames: [BOB.name] });
    t.transport.creates[1]?.resolve({ ok: true, conversation: conversation(3) });
    expect(await creating).toBeNull();
    expect(t.store.getState().activeConversationId).toBe(3);
    expect(t.store.getState().conversationOrder).toEqual([3]);

    // Made, but the server could not describe it after its commit: no error (a retry would make another), a sync.
    const syncs = t.transport.syncs.length;
    const undescribed = t.store.getState().createConversation({ memberNames: [BOB.name, "carol"] });
    t.transport.creates[2]?.resolve({ ok: true, conversation: null });
    expect(await undescribed).toBeNull();
    expect(t.transport.syncs).toHaveLength(syncs + 1);
    expect(t.store.getState().activeConversationId).toBe(3);
  });
});

/** The server holds messages 1..`lastSeq` of conversation `id` and answers every page of them. */
function history(t: Awaited<ReturnType<typeof synced>>, id: number, lastSeq: number) {
  t.transport.auto.fetchMessages = (conversationId, query) => {
    if (conversationId !== id) return { ok: true, messages: [] };
    const all = Array.from({ length: lastSeq }, (_, i) => message(id, i + 1));
    const after = all.filter((m) => m.seq > (query.after ?? 0) && m.seq < (query.before ?? Infinity));
    const limit = query.limit ?? 50;
    return { ok: true, messages: query.after === undefined ? after.slice(-limit) : after.slice(0, limit) };
  };
}

/** The message list sits at its bottom: every loaded message is on screen. */
const AT_BOTTOM = { highestSeq: 0, following: true };
/** The list is scrolled up: messages up to `seq` are on screen, newer ones below it are not. */
const scrolledTo = (seq: number) => ({ highestSeq: seq, following: false });

describe("reading the active conversation", () => {
  it("reads what the list shows, and nothing before it reports", async () => {
    const t = await synced([conversation(1, { lastSeq: 6, lastReadSeq: 2, unreadCount: 4 })], 3);
    history(t, 1, 6);
    attend(t);
    t.store.getState().openConversation(1);
    await flush();
    expect(t.transport.reads).toHaveLength(0);

    t.store.getState().setOnScreen(1, scrolledTo(4));
    expect(t.transport.reads.map((r) => r.input)).toEqual([{ conversationId: 1, seq: 4 }]);
    t.transport.reads[0]?.resolve({ ok: true, unread: update(1, 2, 2, 4), changed: true });
    await flush();
    expect(t.store.getState()).toMatchObject({ totalUnread: 2, unreadCounts: { 1: 2 } });

    t.store.getState().setOnScreen(1, AT_BOTTOM);
    expect(t.transport.reads.map((r) => r.input.seq)).toEqual([4, 6]);
    t.transport.reads[1]?.resolve({ ok: true, unread: update(1, 0, 0, 5), changed: true });
    await flush();
    expect(t.store.getState()).toMatchObject({ totalUnread: 0, unreadCounts: { 1: 0 } });
  });

  it("does not read a conversation that has nothing new", async () => {
    const t = await synced([conversation(1, { lastSeq: 6 })]);
    history(t, 1, 6);
    attend(t);
    t.store.getState().openConversation(1);
    await flush();
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    expect(t.transport.reads).toHaveLength(0);
  });

  it("ignores a report for a conversation that is not open", async () => {
    const t = await synced([conversation(1, { lastSeq: 2, lastReadSeq: 0, unreadCount: 2 }), conversation(2)]);
    history(t, 1, 2);
    attend(t);
    t.store.getState().openConversation(2);
    t.store.getState().setOnScreen(1, scrolledTo(2));
    expect(t.transport.reads).toHaveLength(0);
  });

  it.each([
    ["hidden", { visible: false, focused: true }],
    ["unfocused", { visible: true, focused: false }],
  ])("does not read while the tab is %s, and reads what is on screen once it is back", async (_name, window) => {
    const t = await synced([conversation(1, { lastSeq: 6, lastReadSeq: 2, unreadCount: 4 })], 3);
    history(t, 1, 6);
    t.store.getState().setVisible(window.visible);
    t.store.getState().setFocused(window.focused);
    t.store.getState().openConversation(1);
    await flush();
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    t.store.getState().receiveMessage(message(1, 7));
    expect(t.transport.reads).toHaveLength(0);
    expect(selectShownUnread(1)(t.store.getState())).toBe(4);

    attend(t);
    expect(t.transport.reads.map((r) => r.input)).toEqual([{ conversationId: 1, seq: 7 }]);
  });

  it("reads every new message of the conversation being read while its list follows the bottom, and no other", async () => {
    const t = await synced([conversation(1, { lastSeq: 2 }), conversation(2, { lastSeq: 1 })], 3);
    attend(t);
    t.store.getState().openConversation(1);
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    t.store.getState().receiveMessage(message(1, 3));
    t.store.getState().receiveMessage(message(2, 2));
    t.store.getState().receiveMessage(message(1, 4));
    expect(t.transport.reads.map((r) => r.input)).toEqual([
      { conversationId: 1, seq: 3 },
      { conversationId: 1, seq: 4 },
    ]);
  });

  it("does not read what arrives below a list scrolled up; it counts until the list shows it", async () => {
    const t = await synced([conversation(1, { lastSeq: 5 })], 3);
    history(t, 1, 5);
    attend(t);
    t.store.getState().openConversation(1);
    await flush();
    t.store.getState().setOnScreen(1, scrolledTo(2));
    for (const [i, seq] of [6, 7, 8].entries()) {
      t.store.getState().receiveMessage(message(1, seq));
      t.store.getState().applyUnread(update(1, i + 1, i + 1, 4 + i));
    }
    expect(t.transport.reads).toHaveLength(0);
    const shown = (s = t.store.getState()) => ({ one: selectShownUnread(1)(s), total: selectShownTotal(s) });
    expect(shown()).toEqual({ one: 3, total: 3 });

    // Scrolling down: the badge counts down at once, before the server answers.
    t.store.getState().setOnScreen(1, scrolledTo(7));
    expect(shown()).toEqual({ one: 1, total: 1 });
    expect(t.transport.reads.map((r) => r.input.seq)).toEqual([7]);
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    expect(shown()).toEqual({ one: 0, total: 0 });
    expect(t.transport.reads.map((r) => r.input.seq)).toEqual([7, 8]);
  });

  it("never re-sends a read for a seq it already asked for, but allows a higher one", async () => {
    const t = await synced([conversation(1, { lastSeq: 2 })]);
    attend(t);
    t.store.getState().openConversation(1);
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    t.store.getState().receiveMessage(message(1, 3));
    t.store.getState().receiveMessage(message(1, 3));
    t.store.getState().setFocused(false);
    t.store.getState().setFocused(true);
    t.store.getState().receiveMessage(message(1, 2));
    t.store.getState().readIfActive(1);
    t.store.getState().setOnScreen(1, scrolledTo(2));
    expect(t.transport.reads.map((r) => r.input.seq)).toEqual([3]);
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    t.store.getState().receiveMessage(message(1, 4));
    expect(t.transport.reads.map((r) => r.input.seq)).toEqual([3, 4]);
  });

  it("reads up to the newest loaded message when it is ahead of the list entry", async () => {
    const t = await synced([conversation(1, { lastSeq: 2, lastReadSeq: 1, unreadCount: 1 })]);
    t.transport.auto.fetchMessages = () => ({ ok: true, messages: [message(1, 1), message(1, 2), message(1, 3)] });
    t.store.getState().openConversation(1);
    await flush();
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    attend(t);
    expect(t.transport.reads.map((r) => r.input)).toEqual([{ conversationId: 1, seq: 3 }]);
  });

  it("lets a failed read be sent again", async () => {
    const t = await synced([conversation(1, { lastSeq: 5, lastReadSeq: 1, unreadCount: 4 })]);
    history(t, 1, 5);
    attend(t);
    t.store.getState().openConversation(1);
    await flush();
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    t.transport.reads[0]?.reject(new Error("timeout"));
    await flush();
    t.store.getState().setFocused(false);
    t.store.getState().setFocused(true);
    expect(t.transport.reads.map((r) => r.input.seq)).toEqual([5, 5]);
  });

  it("sends a read that failed while offline after the next sync, though another conversation is open by then", async () => {
    const t = await synced([
      conversation(1, { lastSeq: 5, lastReadSeq: 0, unreadCount: 5 }),
      conversation(2, { lastSeq: 1, lastReadSeq: 1 }),
    ]);
    history(t, 1, 5);
    attend(t);
    t.store.getState().openConversation(1);
    await flush();
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    t.transport.reads[0]?.reject(new Error("disconnected"));
    await flush();
    // Seen here, so this tab shows 0, while the server still counts 5.
    expect(selectShownUnread(1)(t.store.getState())).toBe(0);
    t.store.getState().openConversation(2);
    expect(t.transport.reads).toHaveLength(1);

    // Back online: the snapshot still counts 5 (the read never arrived), and the read goes again.
    t.store.getState().requestSync();
    t.transport.syncs[0]?.resolve(
      snapshot(
        [
          conversation(1, { lastSeq: 5, lastReadSeq: 0, unreadCount: 5 }),
          conversation(2, { lastSeq: 1, lastReadSeq: 1 }),
        ],
        2,
      ),
    );
    await flush();
    expect(t.transport.reads.map((r) => r.input)).toEqual([
      { conversationId: 1, seq: 5 },
      { conversationId: 1, seq: 5 },
    ]);
    // Nothing unseen is sent: conversation 2 had nothing new, and a sync after the read's answer sends nothing.
    t.transport.reads[1]?.resolve({ ok: true, changed: true, unread: update(1, 0, 0, 3) });
    await flush();
    t.store.getState().requestSync();
    t.transport.syncs[1]?.resolve(
      snapshot([conversation(1, { lastSeq: 5, lastReadSeq: 5 }), conversation(2, { lastSeq: 1, lastReadSeq: 1 })], 3),
    );
    await flush();
    expect(t.transport.reads).toHaveLength(2);
  });

  it("sends what was seen at once when the window is left, not after the debounce (a reload would lose it)", async () => {
    const t = await synced([conversation(1, { lastSeq: 9, lastReadSeq: 0, unreadCount: 9 })], 3, {
      readDebounceMs: 300,
    });
    history(t, 1, 9);
    attend(t);
    t.store.getState().openConversation(1);
    await flush();
    t.store.getState().setOnScreen(1, scrolledTo(4));
    t.store.getState().setFocused(false);
    expect(t.transport.reads.map((r) => r.input)).toEqual([{ conversationId: 1, seq: 4 }]);
    t.store.getState().setFocused(true);
    t.store.getState().setOnScreen(1, scrolledTo(6));
    t.store.getState().setVisible(false);
    expect(t.transport.reads.map((r) => r.input.seq)).toEqual([4, 6]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(t.transport.reads).toHaveLength(2);
  });

  it("takes read positions from each snapshot and reads what is still unread once it is on screen", async () => {
    const t = await synced([conversation(1, { lastSeq: 5 })]);
    history(t, 1, 5);
    attend(t);
    t.store.getState().openConversation(1);
    await flush();
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    expect(t.transport.reads).toHaveLength(0);
    history(t, 1, 8);
    t.store.getState().requestSync();
    t.transport.syncs[0]?.resolve(snapshot([conversation(1, { lastSeq: 8, lastReadSeq: 5, unreadCount: 3 })], 9));
    await flush();
    expect(t.transport.reads.map((r) => r.input)).toEqual([{ conversationId: 1, seq: 8 }]);
  });

  it("reads own messages pushed from another tab like any other", async () => {
    const t = await synced([conversation(1, { lastSeq: 1 })]);
    attend(t);
    t.store.getState().openConversation(1);
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    t.store.getState().receiveMessage(message(1, 2, { senderId: ME.id, senderName: ME.name }));
    expect(t.transport.reads.map((r) => r.input.seq)).toEqual([2]);
  });

  it("sends one read for a scroll through many messages, after the debounce", async () => {
    const t = await synced([conversation(1, { lastSeq: 9, lastReadSeq: 0, unreadCount: 9 })], 3, {
      readDebounceMs: 300,
    });
    history(t, 1, 9);
    attend(t);
    t.store.getState().openConversation(1);
    await flush();
    for (const seq of [2, 3, 5, 4, 7]) t.store.getState().setOnScreen(1, scrolledTo(seq));
    expect(selectShownUnread(1)(t.store.getState())).toBe(2);
    await vi.advanceTimersByTimeAsync(299);
    expect(t.transport.reads).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.transport.reads.map((r) => r.input.seq)).toEqual([7]);
  });

  it("sends what was seen at once when another conversation is opened, and nothing of the new one unseen", async () => {
    const t = await synced(
      [conversation(1, { lastSeq: 9, lastReadSeq: 0, unreadCount: 9 }), conversation(2, { lastSeq: 0 })],
      3,
      { readDebounceMs: 300 },
    );
    history(t, 1, 9);
    attend(t);
    t.store.getState().openConversation(1);
    await flush();
    t.store.getState().setOnScreen(1, scrolledTo(4));
    t.store.getState().openConversation(2);
    expect(t.transport.reads.map((r) => r.input)).toEqual([{ conversationId: 1, seq: 4 }]);
    // The list of conversation 1, unmounting after the switch, says it is gone: nothing more.
    t.store.getState().setOnScreen(1, null);
    await vi.advanceTimersByTimeAsync(1000);
    expect(t.transport.reads).toHaveLength(1);
  });
});

describe("what the badges show", () => {
  const STALE_MS = 2000;
  /** Conversation 1 (two messages, both read) open at its bottom while the user looks; no fetch queued. */
  async function readingConversationOne() {
    const t = await synced([conversation(1, { lastSeq: 2 })], 3, { staleUnreadMs: STALE_MS });
    t.transport.auto.fetchMessages = () => ({ ok: true, messages: [message(1, 1), message(1, 2)] });
    attend(t);
    t.store.getState().openConversation(1);
    await flush();
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    t.transport.fetches.length = 0;
    return t;
  }

  it("shows no count for a message that arrives on screen, whichever of its push and its count comes first", async () => {
    const t = await synced([conversation(1, { lastSeq: 1 }), conversation(2, { unreadCount: 2, lastReadSeq: 0 })], 3);
    attend(t);
    t.store.getState().openConversation(1);
    t.store.getState().setOnScreen(1, AT_BOTTOM);
    const shown = () => {
      const s = t.store.getState();
      return { one: selectShownUnread(1)(s), two: selectShownUnread(2)(s), total: selectShownTotal(s) };
    };

    // The count first, then the message.
    t.store.getState().applyUnread(update(1, 1, 3, 4));
    expect(t.store.getState().totalUnread).toBe(3);
    expect(shown()).toEqual({ one: 0, two: 2, total: 2 });
    t.store.getState().receiveMessage(message(1, 2));
    expect(shown()).toEqual({ one: 0, two: 2, total: 2 });
    // The message first, then the count.
    t.store.getState().receiveMessage(message(1, 3));
    t.store.getState().applyUnread(update(1, 2, 4, 5));
    expect(shown()).toEqual({ one: 0, two: 2, total: 2 });

    // Not looking: what arrives counts.
    t.store.getState().setFocused(false);
    t.store.getState().receiveMessage(message(1, 4));
    t.store.getState().applyUnread(update(1, 3, 5, 6));
    expect(shown()).toEqual({ one: 1, two: 2, total: 3 });
    t.store.getState().setFocused(true);
    expect(shown()).toEqual({ one: 0, two: 2, total: 2 });
  });

  it("shows the server's count when it is lower than what this tab has not seen (another tab read further)", async () => {
    const t = await synced([conversation(1, { lastSeq: 5, lastReadSeq: 0, unreadCount: 5 })], 3);
    history(t, 1, 5);
    attend(t);
    t.store.getState().openConversation(1);
    await flush();
    t.store.getState().setOnScreen(1, scrolledTo(1));
    expect(selectShownUnread(1)(t.store.getState())).toBe(4);
    t.store.getState().applyUnread(update(1, 1, 1, 4));
    expect(selectShownUnread(1)(t.store.getState())).toBe(1);
    expect(selectShownTotal(t.store.getState())).toBe(1);
  });

  it("fetches a message whose push was lost when the conversation being read keeps a count", async () => {
    const t = await readingConversationOne();
    t.transport.auto.fetchMessages = undefined;

    t.store.getState().applyUnread(update(1, 1, 1, 4));
    await vi.advanceTimersByTimeAsync(STALE_MS - 1);
    expect(t.transport.fetches).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.transport.fetches.map((f) => f.input)).toEqual([{ conversationId: 1, query: { after: 2, limit: 200 } }]);
    t.transport.fetches[0]?.resolve({ ok: true, messages: [message(1, 3)] });
    await flush();
    expect(t.transport.reads.map((r) => r.input)).toEqual([{ conversationId: 1, seq: 3 }]);
  });

  it("does not fetch when the message arrives as usual", async () => {
    // The same steps as above, with the message and its read arriving: past the check's delay, nothing fetched.
    const t = await readingConversationOne();

    t.store.getState().applyUnread(update(1, 1, 1, 4));
    t.store.getState().receiveMessage(message(1, 3));
    t.transport.reads[0]?.resolve({ ok: true, unread: update(1, 0, 0, 5), changed: true });
    await vi.advanceTimersByTimeAsync(10 * STALE_MS);
    expect(t.transport.fetches).toHaveLength(0);
    expect(t.store.getState().totalUnread).toBe(0);
  });

  it("does not fetch for messages the person has not scrolled to", async () => {
    const t = await readingConversationOne();
    t.store.getState().setOnScreen(1, scrolledTo(1));
    t.store.getState().receiveMessage(message(1, 3));
    t.store.getState().applyUnread(update(1, 1, 1, 4));
    await vi.advanceTimersByTimeAsync(10 * STALE_MS);
    expect(t.transport.fetches).toHaveLength(0);
    expect(selectShownTotal(t.store.getState())).toBe(1);
  });
});

describe("an acknowledgement of a read that changed nothing", () => {
  it("is never applied as a step: its version's change may concern another conversation", async () => {
    // Server at v4: conversation 2 went 0 -> 1 (the push for it is still in flight). Reading conversation 1,
    // already read, changes nothing and answers the current state: c1 = 0, total = 1, v4.
    const t = await synced([conversation(1, { lastSeq: 3, lastReadSeq: 2 }), conversation(2)], 3);
    attend(t);
    t.store.getState().openConversation(1);
    t.store.getState().setOnScreen(1, scrolledTo(3));
    t.transport.reads[0]?.resolve({ ok: true, unread: update(1, 0, 1, 4), changed: false });
    await flush();
    expect(t.store.getState()).toMatchObject({ version: 3, totalUnread: 0 });
    expect(t.transport.syncs).toHaveLength(1); // behind: sync instead of patching

    t.store.getState().applyUnread(update(2, 1, 1, 4)); // the push, arriving meanwhile, is kept for after the sync
    t.transport.syncs[0]?.resolve(
      snapshot([conversation(1, { lastSeq: 3, lastReadSeq: 3 }), conversation(2, { unreadCount: 1 })], 4),
    );
    await flush();
    expect(t.store.getState()).toMatchObject({ version: 4, totalUnread: 1, unreadCounts: { 1: 0, 2: 1 } });
  });

  it("is ignored when this tab is already at or past its version", async () => {
    const t = await synced([conversation(1, { lastSeq: 3, lastReadSeq: 2 })], 5);
    attend(t);
    t.store.getState().openConversation(1);
    t.store.getState().setOnScreen(1, scrolledTo(3));
    t.transport.reads[0]?.resolve({ ok: true, unread: update(1, 0, 0, 5), changed: false });
    await flush();
    expect(t.transport.syncs).toHaveLength(0);
    expect(t.store.getState()).toMatchObject({ version: 5, totalUnread: 0 });
  });
});

describe("conversation:updated", () => {
  it("replaces the members and title of a known conversation and leaves its count alone", async () => {
    const t = await synced([conversation(1, { lastSeq: 4, unreadCount: 2, title: "a, b" }), conversation(2)], 3);
    t.store.getState().updateConversation(conversation(1, { lastSeq: 4, unreadCount: 0, title: "a" }));
    const s = t.store.getState();
    expect(s.conversations[1]?.title).toBe("a");
    expect(s.unreadCounts[1]).toBe(2);
    expect(s.totalUnread).toBe(2);
  });

  it("notes who left a group (once, timed when seen), and nothing for a direct conversation", async () => {
    const carol = { id: 3, name: "carol" };
    const t = await synced([conversation(1, { kind: "group", members: [ME, BOB, carol] }), conversation(2)], 3);
    t.transport.auto.fetchMessages = () => ({ ok: true, messages: [], left: [] });
    t.store.getState().updateConversation(conversation(1, { kind: "group", members: [ME, carol] }));
    t.store.getState().updateConversation(conversation(1, { kind: "group", members: [ME, carol] }));
    expect(t.store.getState().left[1]).toEqual([{ userId: BOB.id, name: BOB.name, at: expect.any(String) }]);
    t.store.getState().updateConversation(conversation(2, { members: [ME] }));
    expect(t.store.getState().left[2]).toBeUndefined();
    // The server's list, with every page of history, replaces what the tab noted.
    const fromServer = [{ userId: BOB.id, name: BOB.name, at: "2026-12-07T10:00:00.000Z" }];
    t.transport.auto.fetchMessages = () => ({ ok: true, messages: [], left: fromServer });
    await t.store.getState().loadLatest(1);
    expect(t.store.getState().left[1]).toEqual(fromServer);
  });

  it("notes who came into a group: 'joined' from a push, 'You added' from this tab's own add (its push makes none); the server's list replaces both", async () => {
    const [carol, dave] = [
      { id: 3, name: "carol" },
      { id: 4, name: "dave" },
    ];
    const t = await synced([conversation(1, { kind: "group", members: [ME, BOB], unreadCount: 2, lastSeq: 5 })], 3);
    t.store.getState().updateConversation(conversation(1, { kind: "group", members: [ME, BOB, carol] }));
    t.store.getState().updateConversation(conversation(1, { kind: "group", members: [ME, BOB, carol] }));
    expect(t.store.getState().added[1]).toEqual([
      { userId: 3, name: "carol", by: null, seq: 5, at: expect.any(String) },
    ]);

    const adding = t.store.getState().addMembers(1, ["DAVE"]);
    expect(t.transport.adds[0]?.input).toEqual({ conversationId: 1, input: { memberNames: ["DAVE"] } });
    // The add's own push comes before its answer: no line yet (nor a "dave joined" said), then "You added dave".
    t.store.getState().updateConversation(conversation(1, { kind: "group", members: [ME, BOB, carol, dave] }));
    expect(t.store.getState().added[1]).toHaveLength(1);
    t.transport.adds[0]?.resolve({
      ok: true,
      conversation: conversation(1, { kind: "group", members: [ME, BOB, carol, dave], unreadCount: 0 }),
    });
    expect(await adding).toBeNull();
    const s = t.store.getState();
    expect(s.added[1]?.[1]).toEqual({
      userId: 4,
      name: "dave",
      by: { id: ME.id, name: ME.name },
      seq: 5,
      at: expect.any(String),
    });
    expect(s.conversations[1]?.members.map((m) => m.id)).toEqual([ME.id, BOB.id, 3, 4]);
    expect(s.unreadCounts[1]).toBe(2); // an add changes nobody's count here

    const refused = t.store.getState().addMembers(1, ["nobody"]);
    t.transport.adds[1]?.resolve({ ok: false, error: { code: "not_found", message: "No user called 'nobody'." } });
    expect(await refused).toBe("No user called 'nobody'.");
    expect(t.store.getState().added[1]).toHaveLength(2);

    const fromServer = [
      { userId: 3, name: "carol", by: { id: BOB.id, name: BOB.name }, seq: 4, at: "2026-12-07T10:00:00.000Z" },
    ];
    t.transport.auto.fetchMessages = () => ({ ok: true, messages: [], left: [], added: fromServer });
    await t.store.getState().loadLatest(1);
    expect(t.store.getState().added[1]).toEqual(fromServer);
  });

  it("notes who removed a member: 'carol removed bob' from a push that names her, 'You removed bob' from this tab's own removal", async () => {
    const [carol, dave] = [
      { id: 3, name: "carol" },
      { id: 4, name: "dave" },
    ];
    const t = await synced([conversation(1, { kind: "group", members: [ME, BOB, carol, dave], lastSeq: 5 })], 3);
    t.store.getState().updateConversation(conversation(1, { kind: "group", members: [ME, carol, dave] }), {
      by: carol,
      removed: [BOB.id],
    });
    expect(t.store.getState().left[1]).toEqual([
      { userId: BOB.id, name: BOB.name, removedBy: carol, at: expect.any(String) },
    ]);

    const removing = t.store.getState().removeMember(1, dave.id);
    expect(t.transport.removals[0]?.input).toEqual({ conversationId: 1, userId: dave.id });
    t.transport.removals[0]?.resolve({
      ok: true,
      conversation: conversation(1, { kind: "group", members: [ME, carol] }),
    });
    expect(await removing).toBeNull();
    let s = t.store.getState();
    expect(s.left[1]?.[1]).toEqual({
      userId: dave.id,
      name: dave.name,
      removedBy: { id: ME.id, name: ME.name },
      at: expect.any(String),
    });
    expect(s.conversations[1]?.members.map((m) => m.id)).toEqual([ME.id, carol.id]);
    // Its own push, after the answer, adds nothing.
    t.store
      .getState()
      .updateConversation(conversation(1, { kind: "group", members: [ME, carol] }), { by: ME, removed: [dave.id] });
    expect(t.store.getState().left[1]).toHaveLength(2);

    const refused = t.store.getState().removeMember(1, carol.id);
    t.transport.removals[1]?.resolve({
      ok: false,
      error: { code: "forbidden", message: "Only the group's owner can remove people from it." },
    });
    expect(await refused).toBe("Only the group's owner can remove people from it.");
    s = t.store.getState();
    expect(s.left[1]).toHaveLength(2);
    expect(s.conversations[1]?.members.map((m) => m.id)).toEqual([ME.id, carol.id]);
  });

  it("names who added someone when the push says, though this tab added nobody, and places the line by its seq", async () => {
    const carol = { id: 3, name: "carol" };
    // Two messages came in between: the line goes by the seq she joined at, not by the tab's lastSeq.
    const t = await synced([conversation(1, { kind: "group", members: [ME, BOB], lastSeq: 7 })], 3);
    t.store.getState().updateConversation(conversation(1, { kind: "group", members: [ME, BOB, carol] }), {
      by: BOB,
      added: [carol.id],
      seq: 5,
    });
    expect(t.store.getState().added[1]).toEqual([
      { userId: carol.id, name: carol.name, by: BOB, seq: 5, at: expect.any(String) },
    ]);
  });

  it("credits a change only with whom it names: another change the same push shows is not its author's", async () => {
    const [carol, dave, eve] = [
      { id: 3, name: "carol" },
      { id: 4, name: "dave" },
      { id: 5, name: "eve" },
    ];
    const t = await synced([conversation(1, { kind: "group", members: [ME, BOB, carol], lastSeq: 5 })], 3);
    // bob added dave; carol's leave committed before the push was read, so it shows her gone too.
    t.store.getState().updateConversation(conversation(1, { kind: "group", members: [ME, BOB, dave] }), {
      by: BOB,
      added: [dave.id],
      seq: 5,
    });
    expect(t.store.getState().left[1]).toEqual([{ userId: carol.id, name: carol.name, at: expect.any(String) }]);
    expect(t.store.getState().added[1]).toEqual([
      { userId: dave.id, name: dave.name, by: BOB, seq: 5, at: expect.any(String) },
    ]);

    // ME removed dave and someone added eve; the add's push, read after both, comes first: dave "left", eve "joined";
    // then the removal's push names who removed dave, and the add's own names who added eve.
    t.store.getState().updateConversation(conversation(1, { kind: "group", members: [ME, BOB, eve] }));
    expect(t.store.getState().left[1]?.[1]).toEqual({ userId: dave.id, name: dave.name, at: expect.any(String) });
    expect(t.store.getState().added[1]?.[1]).toMatchObject({ userId: eve.id, by: null });
    t.store
      .getState()
      .updateConversation(conversation(1, { kind: "group", members: [ME, BOB, eve] }), { by: ME, removed: [dave.id] });
    t.store.getState().updateConversation(conversation(1, { kind: "group", members: [ME, BOB, eve] }), {
      by: BOB,
      added: [eve.id],
      seq: 5,
    });
    const s = t.store.getState();
    expect(s.left[1]?.map((l) => [l.userId, l.removedBy?.name])).toEqual([
      [carol.id, undefined],
      [dave.id, ME.name],
    ]);
    expect(s.added[1]?.map((a) => [a.userId, a.by?.name])).toEqual([
      [dave.id, BOB.name],
      [eve.id, BOB.name],
    ]);
  });

  it("takes an answer's conversation only while the tab still shows it, and syncs when there is none", async () => {
    const t = await synced([conversation(1, { kind: "group", members: [ME, BOB, { id: 3, name: "carol" }] })], 3);
    const removing = t.store.getState().removeMember(1, 3);
    // Deleted from another tab before the answer came.
    t.store.getState().removeConversation(1, { reason: "deleted", by: ME.id });
    t.transport.removals[0]?.resolve({
      ok: true,
      conversation: conversation(1, { kind: "group", members: [ME, BOB] }),
    });
    expect(await removing).toBeNull();
    expect(t.store.getState().conversations[1]).toBeUndefined();
    expect(t.store.getState().conversationOrder).toEqual([]);

    const u = await synced([conversation(1, { kind: "group", members: [ME, BOB, { id: 3, name: "carol" }] })], 3);
    const again = u.store.getState().removeMember(1, 3);
    u.transport.removals[0]?.resolve({ ok: true, conversation: null });
    expect(await again).toBeNull();
    expect(u.transport.syncs).toHaveLength(1);
  });

  it("does not bring back a conversation this tab does not show", async () => {
    const t = await synced([conversation(2)], 3);
    t.store.getState().updateConversation(conversation(1, { title: "gone" }));
    expect(t.store.getState().conversations[1]).toBeUndefined();
  });
});
