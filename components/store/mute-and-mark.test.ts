import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ConversationDTO, UnreadUpdate } from "@/server/contracts";
import { conversation, flush, setup, snapshot, update } from "./fake-transport";
import { selectMarkUnreadRefusal, selectShownMentions, selectShownTotal, selectShownUnread } from "./selectors";
import type { ChatState } from "./types";
import { checkUnreadInvariants, storeUnreadRows } from "./unread";

// Fake timers: a test moves time itself (flush() by a few ms), so no outcome depends on the machine's speed.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

async function synced(conversations: ConversationDTO[], version = 1) {
  const t = setup();
  t.transport.auto.fetchMessages = () => ({ ok: true, messages: [] });
  t.store.getState().requestSync();
  t.transport.syncs[0]?.resolve(snapshot(conversations, version));
  await flush();
  t.transport.syncs.length = 0;
  return t;
}

type Setup = Awaited<ReturnType<typeof synced>>;

function attend(t: Setup) {
  t.store.getState().setVisible(true);
  t.store.getState().setFocused(true);
}

/** Opens the conversation in a looking tab with its list at the bottom, showing up to `seq`. */
async function readTo(t: Setup, conversationId: number, seq: number) {
  attend(t);
  t.store.getState().openConversation(conversationId);
  t.store.getState().setOnScreen(conversationId, { highestSeq: seq, following: true });
  await flush();
}

/** The person opens another conversation and then this one again, its list at the bottom showing up to seq 4. */
function reopen(t: Setup, conversationId: number, other: number) {
  t.store.getState().openConversation(other);
  t.store.getState().openConversation(conversationId);
  t.store.getState().setOnScreen(conversationId, { highestSeq: 4, following: true });
}

const violations = (s: ChatState) => checkUnreadInvariants(s, storeUnreadRows(s));

describe("checkUnreadInvariants", () => {
  const row = (unreadCount: number, mentionCount: number, muted: boolean) => ({ unreadCount, mentionCount, muted });

  it("holds when a muted conversation adds only its mentions to the badge", () => {
    expect(checkUnreadInvariants({ totalUnread: 5, totalMentions: 3 }, [row(3, 1, false), row(5, 2, true)])).toEqual(
      [],
    );
  });

  it.each([
    ["a muted count in the badge", { totalUnread: 8, totalMentions: 3 }, /totalUnread 8 ≠ Σ 5/],
    ["a total of mentions off by one", { totalUnread: 5, totalMentions: 2 }, /totalMentions 2 ≠ Σ 3/],
  ])("reports %s", (_name, totals, problem) => {
    expect(checkUnreadInvariants(totals, [row(3, 1, false), row(5, 2, true)])).toEqual([
      expect.stringMatching(problem),
    ]);
  });

  it("reports more mentions than unread messages in a row", () => {
    expect(checkUnreadInvariants({ totalUnread: 1, totalMentions: 2 }, [row(1, 2, false)])).toEqual([
      "2 mentions > 1 unread",
    ]);
  });
});

describe("mute, mentions and marks in the store", () => {
  it("takes every field and both totals from a snapshot", async () => {
    const t = await synced([
      conversation(1, { unreadCount: 3, mentionCount: 1 }),
      conversation(2, { unreadCount: 5, mentionCount: 2, muted: true }),
      conversation(3, { unreadCount: 1, markedUnread: true, markVersion: 4 }),
    ]);
    const s = t.store.getState();
    expect(s).toMatchObject({ totalUnread: 6, totalMentions: 3 });
    expect(s.unreadDetails).toEqual({
      1: { mentionCount: 1, muted: false, markedUnread: false, markVersion: 0 },
      2: { mentionCount: 2, muted: true, markedUnread: false, markVersion: 0 },
      3: { mentionCount: 0, muted: false, markedUnread: true, markVersion: 4 },
    });
    expect(violations(s)).toEqual([]);
  });

  it("applies the details and both totals of the next version, and ignores an older one", async () => {
    const t = await synced([conversation(1, { unreadCount: 3 }), conversation(2)], 1);
    t.store.getState().applyUnread(update(1, 4, 1, 2, "e1", { muted: true, mentionCount: 1, totalMentions: 1 }));
    expect(t.store.getState()).toMatchObject({ version: 2, totalUnread: 1, totalMentions: 1 });
    expect(t.store.getState().unreadDetails[1]).toMatchObject({ muted: true, mentionCount: 1 });
    t.store.getState().applyUnread(update(1, 4, 4, 2, "e1"));
    expect(t.store.getState().unreadDetails[1]?.muted).toBe(true);
    expect(violations(t.store.getState())).toEqual([]);
  });

  it("shows a muted conversation's count but only its mentions in the total", async () => {
    const t = await synced([
      conversation(1, { unreadCount: 2 }),
      conversation(2, { unreadCount: 5, mentionCount: 2, muted: true }),
    ]);
    const s = t.store.getState();
    expect([selectShownUnread(2)(s), selectShownMentions(2)(s), selectShownTotal(s)]).toEqual([5, 2, 4]);
  });

  it("counts seen mentions of a muted conversation off the shown total with its rows", async () => {
    const t = await synced([
      conversation(1, { unreadCount: 1, lastSeq: 1, lastReadSeq: 0 }),
      conversation(2, { unreadCount: 3, mentionCount: 3, muted: true, lastSeq: 3, lastReadSeq: 0 }),
    ]);
    await readTo(t, 2, 2);
    const s = t.store.getState();
    // One message left above what was seen: at most one of the mentions can still be unread.
    expect([selectShownUnread(2)(s), selectShownMentions(2)(s), selectShownTotal(s)]).toEqual([1, 1, 2]);
  });

  it("removes a muted conversation's mentions, not its count, from the totals with its row", async () => {
    const t = await synced([
      conversation(1, { unreadCount: 1 }),
      conversation(2, { unreadCount: 5, mentionCount: 2, muted: true }),
    ]);
    t.store.getState().removeConversation(2);
    const s = t.store.getState();
    expect(s).toMatchObject({ totalUnread: 1, totalMentions: 0 });
    expect(s.unreadDetails[2]).toBeUndefined();
    expect(violations(s)).toEqual([]);
    expect(t.transport.syncs).toHaveLength(1);
  });
});

describe("mute", () => {
  it("sends the mute and applies its acknowledgement", async () => {
    const t = await synced([conversation(1, { unreadCount: 3, mentionCount: 1 }), conversation(2)], 4);
    const muting = t.store.getState().mute(1, true);
    expect(t.transport.mutes.map((c) => c.input)).toEqual([{ conversationId: 1, muted: true }]);
    // Nothing changes before the server says so.
    expect(t.store.getState().unreadDetails[1]?.muted).toBe(false);
    t.transport.mutes[0]?.resolve({
      ok: true,
      changed: true,
      unread: update(1, 3, 1, 5, "e1", { muted: true, mentionCount: 1, totalMentions: 1 }),
    });
    expect(await muting).toBeNull();
    const s = t.store.getState();
    expect(s).toMatchObject({ version: 5, totalUnread: 1, totalMentions: 1 });
    expect(s.unreadDetails[1]?.muted).toBe(true);
    expect(violations(s)).toEqual([]);
  });

  it("unmutes", async () => {
    const t = await synced([conversation(1, { unreadCount: 3, muted: true })], 4);
    const unmuting = t.store.getState().mute(1, false);
    expect(t.transport.mutes[0]?.input).toEqual({ conversationId: 1, muted: false });
    t.transport.mutes[0]?.resolve({ ok: true, changed: true, unread: update(1, 3, 3, 5) });
    expect(await unmuting).toBeNull();
    expect(t.store.getState()).toMatchObject({ totalUnread: 3, unreadDetails: { 1: { muted: false } } });
  });

  it("keeps the server's refusal for the conversation and changes nothing", async () => {
    const t = await synced([conversation(1, { unreadCount: 3 })], 4);
    const muting = t.store.getState().mute(1, true);
    t.transport.mutes[0]?.resolve({ ok: false, error: { code: "forbidden", message: "Not a member." } });
    expect(await muting).toBe("Not a member.");
    expect(t.store.getState().conversationErrors[1]).toBe("Not a member.");
    expect(t.store.getState()).toMatchObject({ totalUnread: 3, unreadDetails: { 1: { muted: false } } });
  });

  it("refuses a mute or mark made offline at once, asking nothing and keeping nothing for the pane", async () => {
    const t = await synced([conversation(1, { unreadCount: 0, lastSeq: 2 })], 4);
    t.store.getState().openConversation(1);
    t.store.getState().handleDisconnected();
    const offline = "You are offline; try again once the connection is back.";
    expect(await t.store.getState().mute(1, true)).toBe(offline);
    expect(await t.store.getState().markUnread(1)).toBe(offline);
    expect(t.transport.mutes).toEqual([]);
    expect(t.transport.marks).toEqual([]);
    // Said where the person acted (the row's announcement), not later when the conversation is opened.
    expect(t.store.getState().conversationErrors).toEqual({});
    expect(t.store.getState().unreadDetails[1]?.muted).toBe(false);
  });

  it("reports a missing acknowledgement without guessing", async () => {
    const t = await synced([conversation(1, { unreadCount: 3 })], 4);
    const muting = t.store.getState().mute(1, true);
    t.transport.mutes[0]?.reject(new Error("timeout"));
    expect(await muting).toMatch(/did not answer/);
    expect(t.store.getState()).toMatchObject({ totalUnread: 3, unreadDetails: { 1: { muted: false } } });
  });

  it("does not apply an acknowledgement that changed nothing: its version may be another conversation's change", async () => {
    const t = await synced([conversation(1, { unreadCount: 3, muted: true }), conversation(2)], 4);
    const muting = t.store.getState().mute(1, true);
    // v5 is a message in conversation 2 whose push has not arrived; conversation 1 is as this tab shows it.
    t.transport.mutes[0]?.resolve({ ok: true, changed: false, unread: update(1, 3, 1, 5, "e1", { muted: true }) });
    expect(await muting).toBeNull();
    expect(t.store.getState()).toMatchObject({ version: 4, totalUnread: 0 });
    expect(t.transport.syncs).toHaveLength(1);
  });

  it("a mute acknowledged after its own push is not applied twice", async () => {
    const t = await synced([conversation(1, { unreadCount: 3 })], 4);
    const muting = t.store.getState().mute(1, true);
    const muted: UnreadUpdate = update(1, 3, 0, 5, "e1", { muted: true });
    t.store.getState().applyUnread(muted);
    t.transport.mutes[0]?.resolve({ ok: true, changed: true, unread: muted });
    expect(await muting).toBeNull();
    expect(t.store.getState()).toMatchObject({ version: 5, totalUnread: 0, syncing: false });
    expect(t.transport.syncs).toHaveLength(0);
  });
});

describe("mark as unread", () => {
  it("is offered only on a row that shows nothing unread and has a message, else says why", async () => {
    const t = await synced(
      [
        conversation(1, { lastSeq: 4 }),
        conversation(2, { lastSeq: 3, unreadCount: 2 }),
        conversation(3),
        conversation(4, { lastSeq: 5, unreadCount: 5, muted: true }),
        // Marked while empty, before the server stopped marking empty conversations: its 1 is still shown.
        conversation(5, { unreadCount: 1, markedUnread: true, markVersion: 1 }),
        conversation(6, { lastSeq: 3, unreadCount: 3 }),
      ],
      7,
    );
    const refusals = () => [1, 2, 3, 4, 5, 6].map((id) => selectMarkUnreadRefusal(id)(t.store.getState()));
    expect(refusals()).toEqual([
      null,
      "Already unread",
      "No messages yet",
      "Already unread",
      "Already unread",
      "Already unread",
    ]);
    // Read on screen: the row shows 0 before the server has counted the read off, and can be marked.
    await readTo(t, 6, 3);
    expect(selectShownUnread(6)(t.store.getState())).toBe(0);
    expect(refusals()[5]).toBeNull();
  });

  it("sends the mark and shows 1 once acknowledged", async () => {
    const t = await synced([conversation(1, { lastSeq: 4 }), conversation(2, { unreadCount: 2 })], 7);
    const marking = t.store.getState().markUnread(1);
    expect(t.transport.marks.map((c) => c.input)).toEqual([{ conversationId: 1 }]);
    t.transport.marks[0]?.resolve({
      ok: true,
      changed: true,
      unread: update(1, 1, 3, 8, "e1", { markedUnread: true, markVersion: 2 }),
    });
    expect(await marking).toBeNull();
    const s = t.store.getState();
    expect([selectShownUnread(1)(s), selectShownTotal(s)]).toEqual([1, 3]);
    expect(s.unreadDetails[1]).toMatchObject({ markedUnread: true, markVersion: 2 });
    expect(violations(s)).toEqual([]);
  });

  it("opened and read to its end: sends a read naming the mark, keeps showing 1 until the server clears it", async () => {
    const t = await synced([conversation(1, { lastSeq: 4, unreadCount: 1, markedUnread: true, markVersion: 3 })], 7);
    await readTo(t, 1, 4);
    expect(t.transport.reads.map((c) => c.input)).toEqual([{ conversationId: 1, seq: 4, markVersion: 3 }]);
    // No local guess: the mark is the server's to clear.
    expect(selectShownTotal(t.store.getState())).toBe(1);
    expect(selectShownUnread(1)(t.store.getState())).toBe(1);

    t.transport.reads[0]?.resolve({ ok: true, changed: true, unread: update(1, 0, 0, 8) });
    await flush();
    const s = t.store.getState();
    expect([selectShownUnread(1)(s), selectShownTotal(s)]).toEqual([0, 0]);
    expect(s.unreadDetails[1]?.markedUnread).toBe(false);
    // One read per mark: later measurements send nothing more.
    t.store.getState().setOnScreen(1, { highestSeq: 4, following: true });
    expect(t.transport.reads).toHaveLength(1);
  });

  it("is cleared by the read of the messages above it, which names the mark", async () => {
    const t = await synced(
      [conversation(1, { lastSeq: 6, lastReadSeq: 4, unreadCount: 2, markedUnread: true, markVersion: 5 })],
      7,
    );
    await readTo(t, 1, 6);
    expect(t.transport.reads.map((c) => c.input)).toEqual([{ conversationId: 1, seq: 6, markVersion: 5 }]);
  });

  it("a read that does not reach the end still names the mark, and does not count as clearing it", async () => {
    const t = await synced(
      [conversation(1, { lastSeq: 6, lastReadSeq: 2, unreadCount: 4, markedUnread: true, markVersion: 5 })],
      7,
    );
    await readTo(t, 1, 4);
    t.store.getState().setOnScreen(1, { highestSeq: 4, following: false });
    await flush();
    expect(t.transport.reads.map((c) => c.input)).toEqual([{ conversationId: 1, seq: 4, markVersion: 5 }]);
  });

  it("reads of an unmarked conversation name no mark", async () => {
    const t = await synced([conversation(1, { lastSeq: 3, lastReadSeq: 1, unreadCount: 2 })], 7);
    await readTo(t, 1, 3);
    expect(t.transport.reads.map((c) => c.input)).toEqual([{ conversationId: 1, seq: 3 }]);
  });

  it("sends the clearing read again after it failed", async () => {
    const t = await synced([conversation(1, { lastSeq: 4, unreadCount: 1, markedUnread: true, markVersion: 3 })], 7);
    await readTo(t, 1, 4);
    t.transport.reads[0]?.reject(new Error("timeout"));
    await flush();
    t.store.getState().setOnScreen(1, { highestSeq: 4, following: true });
    expect(t.transport.reads.map((c) => c.input)).toEqual([
      { conversationId: 1, seq: 4, markVersion: 3 },
      { conversationId: 1, seq: 4, markVersion: 3 },
    ]);
  });

  it("clears the mark after a failed read of the messages above it", async () => {
    const t = await synced(
      [conversation(1, { lastSeq: 6, lastReadSeq: 4, unreadCount: 2, markedUnread: true, markVersion: 5 })],
      7,
    );
    await readTo(t, 1, 6);
    t.transport.reads[0]?.reject(new Error("timeout"));
    await flush();
    t.store.getState().setOnScreen(1, { highestSeq: 6, following: true });
    await flush();
    expect(t.transport.reads.map((c) => c.input)).toEqual([
      { conversationId: 1, seq: 6, markVersion: 5 },
      { conversationId: 1, seq: 6, markVersion: 5 },
    ]);
  });

  it("does not clear a mark while the tab does not look at the conversation", async () => {
    const t = await synced([conversation(1, { lastSeq: 4, unreadCount: 1, markedUnread: true, markVersion: 3 })], 7);
    t.store.getState().setVisible(false);
    t.store.getState().openConversation(1);
    t.store.getState().setOnScreen(1, { highestSeq: 4, following: true });
    await flush();
    expect(t.transport.reads).toHaveLength(0);
    t.store.getState().setVisible(true);
    t.store.getState().setFocused(true);
    expect(t.transport.reads).toHaveLength(1);
  });

  it("keeps a mark made on the open conversation until the person opens it again", async () => {
    const t = await synced([conversation(1, { lastSeq: 4 }), conversation(2, { lastSeq: 1 })], 7);
    await readTo(t, 1, 4);
    const marking = t.store.getState().markUnread(1);
    t.transport.marks[0]?.resolve({
      ok: true,
      changed: true,
      unread: update(1, 1, 1, 8, "e1", { markedUnread: true, markVersion: 1 }),
    });
    await marking;
    t.store.getState().setOnScreen(1, { highestSeq: 4, following: true });
    await flush();
    expect(t.transport.reads).toHaveLength(0);
    expect(selectShownTotal(t.store.getState())).toBe(1);

    reopen(t, 1, 2);
    expect(t.transport.reads.map((c) => c.input)).toEqual([{ conversationId: 1, seq: 4, markVersion: 1 }]);
  });

  it("a newer mark from another tab on the conversation open here stays until it is opened again, then is cleared by name", async () => {
    const t = await synced(
      [
        conversation(1, { lastSeq: 4, unreadCount: 1, markedUnread: true, markVersion: 3 }),
        conversation(2, { lastSeq: 1 }),
      ],
      7,
    );
    await readTo(t, 1, 4);
    // The server cleared mark 3, then another tab (or device) marked it again (4).
    t.transport.reads[0]?.resolve({ ok: true, changed: true, unread: update(1, 0, 0, 8) });
    await flush();
    t.store.getState().applyUnread(update(1, 1, 1, 9, "e1", { markedUnread: true, markVersion: 4 }));
    await flush();
    // This tab showing it is not the person opening it: the mark stays.
    t.store.getState().setOnScreen(1, { highestSeq: 4, following: true });
    t.store.getState().setFocused(false);
    t.store.getState().setFocused(true);
    expect(t.transport.reads).toHaveLength(1);
    expect(selectShownTotal(t.store.getState())).toBe(1);

    reopen(t, 1, 2);
    expect(t.transport.reads.map((c) => c.input)).toEqual([
      { conversationId: 1, seq: 4, markVersion: 3 },
      { conversationId: 1, seq: 4, markVersion: 4 },
    ]);
  });

  it("a read sent again after a reconnect does not clear a mark made while it was failing", async () => {
    const t = await synced([conversation(1, { lastSeq: 4, lastReadSeq: 2, unreadCount: 2 }), conversation(2)], 7);
    await readTo(t, 1, 4);
    t.transport.reads[0]?.reject(new Error("disconnected"));
    await flush();
    t.store.getState().openConversation(2);
    // Marked on the phone meanwhile; this tab hears of it with the next snapshot, then sends its read again.
    t.store.getState().requestSync();
    t.transport.syncs[0]?.resolve(
      snapshot(
        [
          conversation(1, { lastSeq: 4, lastReadSeq: 2, unreadCount: 2, markedUnread: true, markVersion: 5 }),
          conversation(2),
        ],
        9,
      ),
    );
    await flush();
    expect(t.transport.reads.map((c) => c.input)).toEqual([
      { conversationId: 1, seq: 4 },
      { conversationId: 1, seq: 4 },
    ]);
  });

  it("a mark that a snapshot brings on the open conversation is held; clicking its row lets it go", async () => {
    const t = await synced([conversation(1, { lastSeq: 4 }), conversation(2)], 7);
    await readTo(t, 1, 4);
    t.store.getState().requestSync();
    t.transport.syncs[0]?.resolve(
      snapshot(
        [conversation(1, { lastSeq: 4, unreadCount: 1, markedUnread: true, markVersion: 2 }), conversation(2)],
        9,
      ),
    );
    await flush();
    t.store.getState().setOnScreen(1, { highestSeq: 4, following: true });
    expect(t.transport.reads).toHaveLength(0);
    t.store.getState().openConversation(1);
    t.store.getState().setOnScreen(1, { highestSeq: 4, following: true });
    expect(t.transport.reads.map((c) => c.input)).toEqual([{ conversationId: 1, seq: 4, markVersion: 2 }]);
  });

  it("keeps the mark of a conversation a reload reopens, until the person opens it", async () => {
    const t = await synced(
      [
        conversation(1, { lastSeq: 4, unreadCount: 1, markedUnread: true, markVersion: 3 }),
        conversation(2, { lastSeq: 1 }),
      ],
      7,
    );
    attend(t);
    t.store.getState().openConversation(1, "restored");
    t.store.getState().setOnScreen(1, { highestSeq: 4, following: true });
    await flush();
    expect(t.transport.reads).toHaveLength(0);
    expect(selectShownTotal(t.store.getState())).toBe(1);

    reopen(t, 1, 2);
    expect(t.transport.reads.map((c) => c.input)).toEqual([{ conversationId: 1, seq: 4, markVersion: 3 }]);
  });
});
