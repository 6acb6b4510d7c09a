import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ConversationDTO, Snapshot } from "@/server/contracts";
import { conversation, flush, message, setup, snapshot, update } from "./fake-transport";
import { selectShownTotal } from "./selectors";
import { checkUnreadInvariants, storeUnreadRows } from "./unread";

// Fake timers: a test moves time itself (flush() by a few ms), so no outcome depends on the machine's speed.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/**
 * Six conversations, newest activity first 6…1 (conversation n's last message is seq n); 5, 3 and 1 have unread
 * messages, 2 is muted with a mention.
 */
const all: ConversationDTO[] = [6, 5, 4, 3, 2, 1].map((id) =>
  conversation(id, {
    lastSeq: id,
    lastMessage: message(id, id),
    unreadCount: id % 2 === 1 ? id : id === 2 ? 1 : 0,
    mentionCount: id === 2 ? 1 : 0,
    muted: id === 2,
  }),
);

/** The server's snapshot of `all` with only the first `limit` conversations listed. */
function firstPage(limit: number, version = 1): { ok: true; snapshot: Snapshot } {
  const whole = snapshot(all, version);
  if (!whole.ok) throw new Error("a snapshot");
  return { ok: true, snapshot: { ...whole.snapshot, conversations: all.slice(0, limit), more: limit < all.length } };
}

async function synced(limit = 2) {
  const t = setup({ listPage: limit });
  t.transport.auto.fetchMessages = () => ({ ok: true, messages: [] });
  t.store.getState().requestSync();
  expect(t.transport.syncs[0]?.input).toBe(limit);
  t.transport.syncs[0]?.resolve(firstPage(limit));
  await flush();
  t.transport.syncs.length = 0;
  return t;
}

describe("a list read a page at a time", () => {
  it("lists the first page and knows every count: the badge is the sum of the listed rows and the rest", async () => {
    const t = await synced(2);
    const s = t.store.getState();
    expect(s.conversationOrder).toEqual([6, 5]);
    expect(s.moreConversations).toBe(true);
    // 5 + 3 + 1 unread, and the muted 2's mention.
    expect(s.totalUnread).toBe(10);
    expect(selectShownTotal(s)).toBe(10);
    expect(s.unreadCounts).toMatchObject({ 5: 5, 3: 3, 1: 1, 2: 1 });
    expect(s.unreadDetails[2]).toMatchObject({ muted: true, mentionCount: 1 });
    expect(checkUnreadInvariants(s, storeUnreadRows(s))).toEqual([]);
  });

  it("loads the next page after the oldest listed row, keeps rows it has, and stops when none are left", async () => {
    const t = await synced(2);
    const loading = t.store.getState().loadOlderConversations();
    expect(t.store.getState().loadingConversations).toBe(true);
    // A second call while one page is on its way asks for nothing.
    await t.store.getState().loadOlderConversations();
    expect(t.transport.lists).toHaveLength(1);
    expect(t.transport.lists[0]?.input).toEqual({ before: { at: all[1]!.lastMessage!.createdAt, id: 5 }, limit: 2 });
    // Its rows carry the counts Redis had when it read them, which may be a version ahead: not taken.
    t.transport.lists[0]?.resolve({
      ok: true,
      conversations: [{ ...all[2]!, unreadCount: 7 }, all[3]!],
      more: true,
    });
    await loading;
    let s = t.store.getState();
    expect(s.conversationOrder).toEqual([6, 5, 4, 3]);
    expect(s.unreadCounts[4] ?? 0).toBe(0);
    expect(s.totalUnread).toBe(10);
    expect(s.loadingConversations).toBe(false);

    const last = t.store.getState().loadOlderConversations();
    expect(t.transport.lists[1]?.input.before).toEqual({ at: all[3]!.lastMessage!.createdAt, id: 3 });
    t.transport.lists[1]?.resolve({ ok: true, conversations: all.slice(4), more: false });
    await last;
    s = t.store.getState();
    expect(s.conversationOrder).toEqual([6, 5, 4, 3, 2, 1]);
    expect(s.moreConversations).toBe(false);
    await t.store.getState().loadOlderConversations();
    expect(t.transport.lists).toHaveLength(2);
  });

  it("applies an update of a conversation it does not list, as of any other: the badge stays the sum", async () => {
    const t = await synced(2);
    // Conversation 3 (not listed) is read to its end: 3 fewer.
    t.store.getState().applyUnread(update(3, 0, 7, 2, "e1", { totalMentions: 1 }));
    const s = t.store.getState();
    expect(s.version).toBe(2);
    expect(s.totalUnread).toBe(7);
    expect(s.unreadCounts[3]).toBe(0);
    expect(checkUnreadInvariants(s, storeUnreadRows(s))).toEqual([]);
    expect(t.transport.syncs).toHaveLength(0);
  });

  it("drops a page that a sync overtook (the list it continued is gone), and says why a page did not come", async () => {
    const t = await synced(2);
    const loading = t.store.getState().loadOlderConversations();
    t.store.getState().requestSync(true);
    t.transport.syncs[0]?.resolve(firstPage(2, 5));
    await flush();
    t.transport.lists[0]?.resolve({ ok: true, conversations: all.slice(2, 4), more: true });
    await loading;
    expect(t.store.getState().conversationOrder).toEqual([6, 5]);
    expect(t.store.getState().moreConversations).toBe(true);

    const refused = t.store.getState().loadOlderConversations();
    t.transport.lists[1]?.resolve({
      ok: false,
      error: { code: "rate_limited", message: "Too many pages of conversations at once; try again shortly." },
    });
    await refused;
    expect(t.store.getState()).toMatchObject({
      loadingConversations: false,
      conversationsError: "Too many pages of conversations at once; try again shortly.",
    });
    const lost = t.store.getState().loadOlderConversations();
    expect(t.store.getState().conversationsError).toBeNull();
    t.transport.lists[2]?.reject(new Error("timeout"));
    await lost;
    expect(t.store.getState().conversationsError).toBe("The server did not answer; try again.");
  });

  it("a message in a conversation it does not list brings the first page again, with that conversation on it", async () => {
    const t = await synced(2);
    t.store.getState().receiveMessage(message(1, 2, { createdAt: "2030-01-01T00:00:00.000Z" }));
    expect(t.transport.syncs).toHaveLength(1);
    const moved = { ...all[5]!, lastSeq: 2, lastMessage: message(1, 2, { createdAt: "2030-01-01T00:00:00.000Z" }) };
    const whole = snapshot([moved, ...all.slice(0, 5)], 2);
    if (!whole.ok) throw new Error("a snapshot");
    t.transport.syncs[0]?.resolve({
      ok: true,
      snapshot: { ...whole.snapshot, conversations: [moved, all[0]!], more: true },
    });
    await flush();
    // 5, paged in by the first sync, stays (the user is still in it); the next page starts after the new first page.
    expect(t.store.getState().conversationOrder).toEqual([1, 6, 5]);
    expect(t.store.getState().listEnd).toEqual({ at: all[0]!.lastMessage!.createdAt, id: 6 });
    expect(t.transport.syncs).toHaveLength(1);
  });

  /** Synced with a first page of 2, then the next two pages loaded: 6…1 all listed. */
  async function pagedIn() {
    const t = await synced(2);
    for (const [i, rows] of [all.slice(2, 4), all.slice(4)].entries()) {
      const loading = t.store.getState().loadOlderConversations();
      t.transport.lists[i]?.resolve({ ok: true, conversations: rows, more: i === 0 });
      await loading;
    }
    expect(t.store.getState().conversationOrder).toEqual([6, 5, 4, 3, 2, 1]);
    expect(t.store.getState().moreConversations).toBe(false);
    return t;
  }

  it("keeps the rows it paged in and the open conversation through a sync, as deep as it lists, and drops one the user left", async () => {
    const t = await pagedIn();
    t.store.getState().openConversation(2);
    t.store.getState().requestSync(true);
    // As deep as the tab lists.
    expect(t.transport.syncs[0]?.input).toBe(6);
    const whole = snapshot(
      all.filter((c) => c.id !== 4),
      7,
    );
    if (!whole.ok) throw new Error("a snapshot");
    // The server answers a first page of 2 all the same (say it was asked by another tab): the rest are kept.
    t.transport.syncs[0]?.resolve({
      ok: true,
      snapshot: { ...whole.snapshot, conversations: all.slice(0, 2), more: true },
    });
    await flush();
    const s = t.store.getState();
    expect(s.conversationOrder).toEqual([6, 5, 3, 2, 1]);
    expect(s.activeConversationId).toBe(2);
    expect(s.conversations[2]).toBeDefined();
    // Everything the user is in is listed, so nothing is left to page in.
    expect(s.moreConversations).toBe(false);
    expect(s.listEnd).toBeNull();
  });

  it("sends the messages queued for a conversation it paged in once a sync has landed, and drops them for one the user left", async () => {
    const t = await pagedIn();
    t.store.setState({ connected: false });
    const kept = t.store.getState().sendMessage(2, "still here");
    const dropped = t.store.getState().sendMessage(4, "gone");
    t.store.getState().handleConnected();
    const whole = snapshot(
      all.filter((c) => c.id !== 4),
      7,
    );
    if (!whole.ok) throw new Error("a snapshot");
    t.transport.syncs
      .at(-1)
      ?.resolve({ ok: true, snapshot: { ...whole.snapshot, conversations: all.slice(0, 2), more: true } });
    await flush();
    expect(t.transport.sends.map((send) => send.input.content)).toEqual(["still here"]);
    t.transport.sends[0]?.resolve({
      ok: true,
      message: message(2, 3, { clientMsgId: t.transport.sends[0].input.clientMsgId }),
    });
    expect(await kept).toBe(true);
    expect(await dropped).toBe(false);
  });

  it("goes on from where the last page ended, not from an old row that came in another way", async () => {
    const t = await synced(2);
    // The person opens their old direct conversation again (the server answers the existing one): it lists at the end.
    t.store.getState().receiveConversation(all[5]!);
    expect(t.store.getState().conversationOrder).toEqual([6, 5, 1]);
    const loading = t.store.getState().loadOlderConversations();
    expect(t.transport.lists[0]?.input.before).toEqual({ at: all[1]!.lastMessage!.createdAt, id: 5 });
    t.transport.lists[0]?.resolve({ ok: true, conversations: all.slice(2, 4), more: true });
    await loading;
    expect(t.store.getState().conversationOrder).toEqual([6, 5, 4, 3, 1]);
    expect(t.store.getState().listEnd).toEqual({ at: all[3]!.lastMessage!.createdAt, id: 3 });
  });
});
