import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ConversationDTO } from "@/server/contracts";
import { BOB, conversation, flush, flushMicrotasks, ME, message, setup, snapshot, update } from "./fake-transport";
import { selectShownTotal, selectShownUnread } from "./selectors";
import { checkUnreadInvariants, storeUnreadRows } from "./unread";
import type { ChatState } from "./types";

// Fake timers: a test moves time itself (flush() by a few ms), so no outcome depends on the machine's speed.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** What the header badge shows against what the shown rows add up to. */
function shown(s: ChatState) {
  const rows = s.conversationOrder.reduce((sum, id) => sum + selectShownUnread(id)(s), 0);
  return { total: selectShownTotal(s), rows };
}

/** A store at (e1, version) with the given conversations; records every state where the badges disagree. */
async function synced(conversations: ConversationDTO[], version: number) {
  const t = setup();
  t.transport.auto.fetchMessages = () => ({ ok: true, messages: [] });
  t.store.getState().requestSync();
  t.transport.syncs[0]?.resolve(snapshot(conversations, version));
  await flush();
  t.transport.syncs.length = 0;
  const violations: string[] = [];
  t.store.subscribe((s) => {
    const { total, rows } = shown(s);
    if (total !== rows) violations.push(`shown total ${total} ≠ Σ shown rows ${rows} at v${s.version}`);
  });
  return { ...t, violations };
}

describe("conversation:removed", () => {
  it("drops a conversation whose count the server already zeroed, without a sync", async () => {
    const t = await synced([conversation(1, { unreadCount: 2 }), conversation(2, { unreadCount: 3 })], 4);
    t.store.getState().applyUnread(update(2, 0, 2, 5));
    t.store.getState().removeConversation(2);
    const s = t.store.getState();
    expect(s.conversationOrder).toEqual([1]);
    expect(s.conversations[2]).toBeUndefined();
    expect(s.unreadCounts).toEqual({ 1: 2 });
    expect(shown(s)).toEqual({ total: 2, rows: 2 });
    expect(t.transport.syncs).toHaveLength(0);
    expect(t.violations).toEqual([]);
  });

  it("takes a count the server has not zeroed yet out of the total in the same step, then syncs", async () => {
    const t = await synced([conversation(1, { unreadCount: 2 }), conversation(2, { unreadCount: 3 })], 4);
    t.store.getState().removeConversation(2);
    expect(shown(t.store.getState())).toEqual({ total: 2, rows: 2 });
    expect(t.transport.syncs).toHaveLength(1);

    // The server's own update arrives during the sync and is replayed on top of the snapshot.
    t.store.getState().applyUnread(update(2, 0, 2, 5));
    t.transport.syncs[0]?.resolve(snapshot([conversation(1, { unreadCount: 2 })], 4));
    await flush();
    expect(t.store.getState()).toMatchObject({ version: 5, totalUnread: 2, syncing: false, conversationOrder: [1] });
    expect(t.store.getState().conversations[2]).toBeUndefined();
    expect(t.violations).toEqual([]);
  });

  it("closes the conversation if it was open and drops its messages", async () => {
    const t = await synced([conversation(1, { lastSeq: 2 }), conversation(2)], 4);
    t.transport.auto.fetchMessages = () => ({ ok: true, messages: [message(1, 1), message(1, 2)] });
    t.store.getState().openConversation(1);
    await flush();
    expect(t.store.getState().messages[1]?.items).toHaveLength(2);

    t.store.getState().removeConversation(1);
    const s = t.store.getState();
    expect(s.activeConversationId).toBeNull();
    expect(s.messages[1]).toBeUndefined();
    expect(s.conversationOrder).toEqual([2]);

    // A message that was on its way when the conversation went does not bring it back.
    t.store.getState().receiveMessage(message(1, 3));
    expect(t.store.getState().messages[1]).toBeUndefined();
    expect(t.transport.syncs).toHaveLength(0);
  });

  it("supersedes a sync whose snapshot may predate the removal", async () => {
    const t = await synced([conversation(1), conversation(2, { unreadCount: 1 })], 4);
    t.store.getState().requestSync();
    t.store.getState().applyUnread(update(2, 0, 0, 5));
    t.store.getState().removeConversation(2);
    expect(t.transport.syncs).toHaveLength(2);

    t.transport.syncs[0]?.resolve(snapshot([conversation(1), conversation(2, { unreadCount: 1 })], 4));
    await flush();
    expect(t.store.getState().conversationOrder).toEqual([1]);
    t.transport.syncs[1]?.resolve(snapshot([conversation(1)], 5));
    await flush();
    expect(t.store.getState()).toMatchObject({ version: 5, totalUnread: 0, syncing: false, conversationOrder: [1] });
    expect(t.violations).toEqual([]);
  });

  it("syncs instead of counting a dropped conversation again", async () => {
    const t = await synced([conversation(1, { unreadCount: 1 }), conversation(2)], 4);
    t.store.getState().removeConversation(2);
    expect(t.transport.syncs).toHaveLength(0);
    // A message counted for it before the server removed it, announced after this tab dropped it.
    t.store.getState().applyUnread(update(2, 1, 2, 5));
    expect(t.store.getState()).toMatchObject({ version: 4, totalUnread: 1 });
    expect(t.transport.syncs).toHaveLength(1);
    t.store.getState().applyUnread(update(2, 0, 1, 6));
    t.transport.syncs[0]?.resolve(snapshot([conversation(1, { unreadCount: 1 })], 6));
    await flush();
    expect(t.store.getState()).toMatchObject({ version: 6, totalUnread: 1, unreadCounts: { 1: 1 } });
    expect(t.violations).toEqual([]);
  });

  it("syncs instead of taking totals that still count a dropped conversation from another conversation's push", async () => {
    const t = await synced([conversation(1, { unreadCount: 2 }), conversation(2, { unreadCount: 1 })], 4);
    t.store.getState().removeConversation(2);
    expect(t.store.getState()).toMatchObject({ totalUnread: 2, unreadCounts: { 1: 2 } });
    // The sync the drop asked for fails (the server could not take the conversation out of its counters yet).
    t.transport.syncs[0]?.reject(new Error("unavailable"));
    await flushMicrotasks(); // its retry waits for a timer, which does not run here
    expect(t.store.getState().syncing).toBe(false);

    // A message in conversation 1, whose totals still count conversation 2's message: 3 + 1, not 3.
    t.store.getState().applyUnread(update(1, 3, 4, 5));
    expect(t.store.getState()).toMatchObject({ version: 4, totalUnread: 2, unreadCounts: { 1: 2 }, syncing: true });
    expect(checkUnreadInvariants(t.store.getState(), storeUnreadRows(t.store.getState()))).toEqual([]);

    // The snapshot, once the server has removed it, is the truth.
    t.transport.syncs.at(-1)?.resolve(snapshot([conversation(1, { unreadCount: 3 })], 6));
    await flush();
    expect(t.store.getState()).toMatchObject({ version: 6, totalUnread: 3, unreadCounts: { 1: 3 } });
    expect(t.violations).toEqual([]);
  });

  it("applies a push whose totals move by its own row's change, muted or not", async () => {
    const t = await synced(
      [conversation(1, { unreadCount: 2 }), conversation(2, { unreadCount: 4, mentionCount: 1 })],
      4,
    );
    const broken: string[] = [];
    t.store.subscribe((s) => broken.push(...checkUnreadInvariants(s, storeUnreadRows(s))));
    // Muting 2: the badge counts its mentions only.
    t.store.getState().applyUnread(update(2, 4, 3, 5, "e1", { muted: true, mentionCount: 1, totalMentions: 1 }));
    expect(t.store.getState()).toMatchObject({ version: 5, totalUnread: 3 });
    t.store.getState().applyUnread(update(1, 0, 1, 6, "e1", { totalMentions: 1 }));
    expect(t.store.getState()).toMatchObject({ version: 6, totalUnread: 1, syncing: false });
    expect(t.transport.syncs).toHaveLength(0);
    expect(broken).toEqual([]);
  });
});

describe("unread:stale", () => {
  it("replaces counts, total and list with a snapshot even at the same version", async () => {
    const t = await synced([conversation(1, { unreadCount: 2 }), conversation(2, { unreadCount: 1 })], 7);
    t.store.getState().handleStale();
    expect(t.transport.syncs).toHaveLength(1);
    // Reconciliation repaired the counters in place.
    t.transport.syncs[0]?.resolve(
      snapshot([conversation(1, { unreadCount: 5 }), conversation(3, { unreadCount: 1, lastSeq: 1 })], 7),
    );
    await flush();
    const s = t.store.getState();
    expect(s).toMatchObject({ version: 7, totalUnread: 6, unreadCounts: { 1: 5, 3: 1 }, syncing: false });
    expect(s.conversationOrder).toEqual([3, 1]);
    expect(t.violations).toEqual([]);
  });

  it("supersedes a sync in flight and catches up the open conversation", async () => {
    const t = await synced([conversation(1, { lastSeq: 2 })], 3);
    t.transport.auto.fetchMessages = () => ({ ok: true, messages: [message(1, 1), message(1, 2)] });
    t.store.getState().openConversation(1);
    await flush();
    t.transport.fetches.length = 0;
    t.transport.auto.fetchMessages = undefined;

    t.store.getState().requestSync();
    t.store.getState().handleStale();
    expect(t.transport.syncs).toHaveLength(2);
    t.transport.syncs[1]?.resolve(snapshot([conversation(1, { lastSeq: 2 })], 3));
    await flush();
    t.transport.syncs[0]?.resolve(snapshot([conversation(1, { lastSeq: 2, unreadCount: 9 })], 2));
    await flush();
    expect(t.store.getState().totalUnread).toBe(0);
    // Even though the snapshot shows nothing new, a lost message:new (or message:deleted, for the newest page) would
    // be fetched.
    expect(t.transport.fetches.map((f) => f.input)).toEqual([{ conversationId: 1, query: { after: 0, limit: 200 } }]);
  });
});

describe("leaving and deleting", () => {
  it.each([
    ["leaveConversation", "leaves"],
    ["deleteConversation", "deletes"],
  ] as const)("%s removes the conversation once the server agrees", async (action, queue) => {
    const t = await synced([conversation(1, { kind: "group", unreadCount: 2 }), conversation(2)], 3);
    const done = t.store.getState()[action](1);
    expect(t.transport[queue].map((p) => p.input)).toEqual([1]);
    expect(t.store.getState().conversations[1]).toBeDefined();
    t.transport[queue][0]?.resolve({ ok: true });
    expect(await done).toBeNull();
    expect(t.store.getState().conversationOrder).toEqual([2]);
    expect(shown(t.store.getState())).toEqual({ total: 0, rows: 0 });

    // The push that follows changes nothing and starts no second sync.
    t.store.getState().removeConversation(1);
    expect(t.transport.syncs).toHaveLength(1);
    expect(t.violations).toEqual([]);
  });

  it("shows the server's refusal and keeps the conversation", async () => {
    const t = await synced([conversation(1, { kind: "group" }), conversation(2)], 3);
    const refused = "Only the group's owner can delete it; you can leave it.";
    const deleting = t.store.getState().deleteConversation(1);
    t.transport.deletes[0]?.resolve({ ok: false, error: { code: "forbidden", message: refused } });
    expect(await deleting).toBe(refused);
    expect(t.store.getState().conversationErrors).toEqual({ 1: refused });
    expect(t.store.getState().conversationOrder).toEqual([2, 1]);

    // A new attempt clears the old error; its own failure replaces it.
    const leaving = t.store.getState().leaveConversation(1);
    expect(t.store.getState().conversationErrors).toEqual({});
    t.transport.leaves[0]?.resolve({ ok: false, error: { code: "unavailable", message: "Try again." } });
    expect(await leaving).toBe("Try again.");
    expect(t.store.getState().conversationErrors).toEqual({ 1: "Try again." });
    expect(t.store.getState().conversations[1]).toBeDefined();
  });

  it("forgets a failure to reach the server once connected again, and keeps the server's own refusals", async () => {
    const t = await synced([conversation(1, { kind: "group" }), conversation(2), conversation(3)], 3);
    const unreachable = "Cannot reach the server. Check your connection.";
    const refused = "Only the group's owner can delete it; you can leave it.";
    // Unanswered just before the connection dropped; then refused while it was down.
    const muting = t.store.getState().mute(3, true);
    t.transport.mutes[0]?.reject(new Error("timeout"));
    await muting;
    t.store.getState().handleDisconnected();
    const leaving = t.store.getState().leaveConversation(1);
    t.transport.leaves[0]?.resolve({ ok: false, error: { code: "unavailable", message: unreachable } });
    const deleting = t.store.getState().deleteConversation(2);
    t.transport.deletes[0]?.resolve({ ok: false, error: { code: "forbidden", message: refused } });
    await Promise.all([leaving, deleting]);
    expect(t.store.getState().conversationErrors).toEqual({
      1: unreachable,
      2: refused,
      3: "The server did not answer; try again.",
    });

    t.store.getState().handleConnected();
    expect(t.store.getState().conversationErrors).toEqual({ 2: refused });
    expect(t.store.getState().conversationOrder).toEqual([3, 2, 1]);
  });
});

describe("the open conversation removed elsewhere", () => {
  it("says why the pane emptied when another tab or member removed it, not when this tab did", async () => {
    const t = await synced([conversation(1, { kind: "group", title: "Trip" }), conversation(2), conversation(3)], 3);
    t.store.getState().openConversation(1);
    t.store.getState().removeConversation(1);
    expect(t.store.getState().activeConversationId).toBeNull();
    expect(t.store.getState().goneNotice).toEqual({
      title: "Trip",
      conversationKind: "group",
      cause: { kind: "unknown" },
    });
    // Opening another conversation forgets the notice.
    t.store.getState().openConversation(2);
    expect(t.store.getState().goneNotice).toBeNull();

    // A conversation that was not open goes without a notice.
    t.store.getState().removeConversation(3);
    expect(t.store.getState().goneNotice).toBeNull();
  });

  it.each([
    ["the server's push before its answer", true],
    ["its answer before the push", false],
  ])("shows nothing for this tab's own delete, %s", async (_, pushFirst) => {
    const t = await synced([conversation(1, { kind: "group", title: "Trip" }), conversation(2)], 3);
    t.store.getState().openConversation(1);
    const deleting = t.store.getState().deleteConversation(1);
    if (pushFirst) t.store.getState().removeConversation(1);
    t.transport.deletes[0]?.resolve({ ok: true });
    expect(await deleting).toBeNull();
    if (!pushFirst) t.store.getState().removeConversation(1);
    expect(t.store.getState().activeConversationId).toBeNull();
    expect(t.store.getState().goneNotice).toBeNull();
  });

  it("says who removed it and where, as the push tells", async () => {
    const t = await synced([conversation(1, { kind: "group", title: "Trip" }), conversation(2, { title: "bob" })], 3);
    t.store.getState().openConversation(1);
    t.store.getState().removeConversation(1, { reason: "deleted", by: BOB.id });
    expect(t.store.getState().goneNotice).toEqual({
      title: "Trip",
      conversationKind: "group",
      cause: { kind: "deleted", by: BOB.name },
    });
    t.store.getState().openConversation(2);
    t.store.getState().removeConversation(2, { reason: "deleted", by: ME.id });
    expect(t.store.getState().goneNotice).toMatchObject({
      conversationKind: "direct",
      cause: { kind: "deleted", by: "you" },
    });
  });

  it("says the user left it elsewhere, and 'not known' for a deleter who is no member", async () => {
    const t = await synced([conversation(1, { kind: "group" }), conversation(2, { kind: "group" })], 3);
    t.store.getState().openConversation(1);
    t.store.getState().removeConversation(1, { reason: "left" });
    expect(t.store.getState().goneNotice).toMatchObject({ cause: { kind: "left" } });
    t.store.getState().openConversation(2);
    t.store.getState().removeConversation(2, { reason: "deleted", by: 999_999 });
    expect(t.store.getState().goneNotice).toMatchObject({ cause: { kind: "deleted", by: null } });
  });

  it("ignores a conversation:created that comes after the same conversation's conversation:removed", async () => {
    const t = await synced([conversation(2)], 3);
    t.store.getState().removeConversation(1, { reason: "deleted", by: BOB.id });
    t.store.getState().receiveConversation(conversation(1, { kind: "group", title: "Doomed" }));
    expect(t.store.getState().conversations[1]).toBeUndefined();
    expect(t.store.getState().conversationOrder).toEqual([2]);
    expect(t.violations).toEqual([]);
  });

  it("says who removed the user from the group", async () => {
    const t = await synced([conversation(1, { kind: "group", title: "Trip", members: [ME, BOB] })], 3);
    t.store.getState().openConversation(1);
    t.store.getState().removeConversation(1, { reason: "removed", by: BOB.id });
    expect(t.store.getState().goneNotice).toEqual({
      title: "Trip",
      conversationKind: "group",
      cause: { kind: "removed", by: BOB.name },
    });
    expect(t.store.getState().conversationOrder).toEqual([]);
  });

  it("is dismissed on request", async () => {
    const t = await synced([conversation(1, { title: "bob" }), conversation(2)], 3);
    t.store.getState().openConversation(1);
    t.store.getState().removeConversation(1);
    expect(t.store.getState().goneNotice).toMatchObject({ title: "bob" });
    t.store.getState().dismissGoneNotice();
    expect(t.store.getState().goneNotice).toBeNull();
  });
});
