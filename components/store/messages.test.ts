import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ConversationDTO, MessageDTO } from "@/server/contracts";
import { draftKey, memoryStorage } from "./drafts";
import { BOB, conversation, flush, message, ME, setup, snapshot } from "./fake-transport";
import { extendTail, MAX_SEND_RETRY_MS, mergeMessages, NO_ANSWER_MESSAGE, PAGE_SIZE } from "./messages";
import { selectQueuedCount } from "./selectors";

// Fake timers: a test moves time itself (flush() by a few ms), so no outcome depends on the machine's speed.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const range = (conversationId: number, from: number, to: number): MessageDTO[] =>
  Array.from({ length: to - from + 1 }, (_, i) => message(conversationId, from + i));
const seqs = (items: MessageDTO[] | undefined) => items?.map((m) => m.seq);

async function synced(conversations: ConversationDTO[], options: Parameters<typeof setup>[0] = {}) {
  const t = setup(options);
  t.store.getState().requestSync();
  t.transport.syncs[0]?.resolve(snapshot(conversations, 1));
  await flush();
  t.transport.syncs.length = 0;
  return t;
}

describe("mergeMessages", () => {
  it("keeps ascending seq order without duplicates", () => {
    const merged = mergeMessages(
      [message(1, 2), message(1, 5)],
      [message(1, 4), message(1, 2), message(1, 1), message(1, 6)],
    );
    expect(seqs(merged)).toEqual([1, 2, 4, 5, 6]);
  });

  it("returns the same array when nothing is new", () => {
    const items = [message(1, 1), message(1, 2)];
    expect(mergeMessages(items, [message(1, 2)])).toBe(items);
    expect(mergeMessages(items, [])).toBe(items);
  });

  it("dedupes by id as well as by seq", () => {
    const merged = mergeMessages([message(1, 1)], [{ ...message(1, 1), seq: 9 }]);
    expect(seqs(merged)).toEqual([1]);
  });

  it("extends the gap-free tail over consecutive seqs only", () => {
    expect(extendTail(range(1, 1, 5), 2)).toBe(5);
    expect(extendTail([message(1, 3), message(1, 4), message(1, 6)], 3)).toBe(4);
  });
});

describe("history", () => {
  it("loads the newest page on open and older pages before the oldest seq", async () => {
    const t = await synced([conversation(1, { lastSeq: 120 })]);
    t.store.getState().openConversation(1);
    expect(t.transport.fetches.map((f) => f.input)).toEqual([{ conversationId: 1, query: { limit: PAGE_SIZE } }]);
    t.transport.fetches[0]?.resolve({ ok: true, messages: range(1, 71, 120) });
    await flush();
    expect(t.store.getState().messages[1]).toMatchObject({ loaded: true, hasMore: true, tailSeq: 120 });

    void t.store.getState().loadOlder(1);
    void t.store.getState().loadOlder(1);
    expect(t.transport.fetches[1]?.input).toEqual({ conversationId: 1, query: { before: 71, limit: PAGE_SIZE } });
    expect(t.transport.fetches).toHaveLength(2);
    t.transport.fetches[1]?.resolve({ ok: true, messages: range(1, 21, 70) });
    await flush();

    void t.store.getState().loadOlder(1);
    t.transport.fetches[2]?.resolve({ ok: true, messages: range(1, 1, 20) });
    await flush();
    const list = t.store.getState().messages[1];
    expect(list?.items).toHaveLength(120);
    expect(list?.hasMore).toBe(false);
    void t.store.getState().loadOlder(1);
    expect(t.transport.fetches).toHaveLength(3);
  });

  it("shows a load error and leaves the list unloaded", async () => {
    const t = await synced([conversation(1, { lastSeq: 3 })]);
    t.store.getState().openConversation(1);
    t.transport.fetches[0]?.resolve({ ok: false, error: { code: "forbidden", message: "Not a member" } });
    await flush();
    expect(t.store.getState().messages[1]).toMatchObject({ loaded: false, loading: false, error: "Not a member" });
  });

  it("dedupes a message:new that arrives twice, also for the sender", async () => {
    const t = await synced([conversation(1, { lastSeq: 2 })]);
    t.transport.auto.fetchMessages = () => ({ ok: true, messages: range(1, 1, 2) });
    t.store.getState().openConversation(1);
    await flush();
    const own = message(1, 3, { senderId: ME.id });
    t.store.getState().receiveMessage(own);
    t.store.getState().receiveMessage(own);
    t.store.getState().receiveMessage(message(1, 2));
    expect(seqs(t.store.getState().messages[1]?.items)).toEqual([1, 2, 3]);
  });

  it("catches up after a push reveals a gap in the open conversation", async () => {
    const t = await synced([conversation(1, { lastSeq: 2 })]);
    t.store.getState().openConversation(1);
    t.transport.fetches[0]?.resolve({ ok: true, messages: range(1, 1, 2) });
    await flush();
    t.store.getState().receiveMessage(message(1, 5));
    expect(t.transport.fetches[1]?.input).toEqual({ conversationId: 1, query: { after: 2, limit: 200 } });
    t.transport.fetches[1]?.resolve({ ok: true, messages: range(1, 3, 5) });
    await flush();
    expect(seqs(t.store.getState().messages[1]?.items)).toEqual([1, 2, 3, 4, 5]);
    expect(t.store.getState().messages[1]?.tailSeq).toBe(5);
    expect(t.transport.fetches).toHaveLength(2);
  });

  it("on reconnect, syncs and fetches the open conversation's newest page and after: a deletion missed shows", async () => {
    const t = await synced([conversation(1, { lastSeq: 60 }), conversation(2, { lastSeq: 1 })]);
    t.store.getState().openConversation(1);
    t.transport.fetches[0]?.resolve({ ok: true, messages: range(1, 11, 60) });
    await flush();
    t.store.getState().openConversation(2);
    t.transport.fetches[1]?.resolve({ ok: true, messages: range(2, 1, 1) });
    await flush();
    t.store.getState().openConversation(1);

    t.store.getState().handleDisconnected();
    t.store.getState().handleConnected();
    expect(t.transport.syncs).toHaveLength(1);
    t.transport.syncs[0]?.resolve(snapshot([conversation(1, { lastSeq: 62 }), conversation(2, { lastSeq: 1 })], 4));
    await flush();
    // While offline, message 55 was deleted and 61, 62 came.
    expect(t.transport.fetches[2]?.input).toEqual({ conversationId: 1, query: { after: 10, limit: 200 } });
    const page = range(1, 11, 62).map((m) => (m.seq === 55 ? { ...m, content: "", deleted: true as const } : m));
    t.transport.fetches[2]?.resolve({ ok: true, messages: page });
    await flush();
    const items = t.store.getState().messages[1]!.items;
    expect(seqs(items)).toEqual(range(1, 11, 62).map((m) => m.seq));
    expect(items.find((m) => m.seq === 55)).toMatchObject({ content: "", deleted: true });
    expect(items.filter((m) => m.deleted)).toHaveLength(1);

    // The other conversation loaded here is fetched again when it is shown, once.
    t.store.getState().openConversation(2);
    expect(t.transport.fetches[3]?.input).toEqual({ conversationId: 2, query: { after: 0, limit: 200 } });
    t.transport.fetches[3]?.resolve({ ok: true, messages: range(2, 1, 1) });
    await flush();
    t.store.getState().openConversation(1);
    t.store.getState().openConversation(2);
    expect(t.transport.fetches).toHaveLength(4);
  });

  it("a deletion pushed or acknowledged turns the copy on screen and the row's last message deleted, for good", async () => {
    const t = await synced([conversation(1, { lastSeq: 3, lastMessage: message(1, 3) })]);
    t.store.getState().openConversation(1);
    t.transport.fetches[0]?.resolve({ ok: true, messages: range(1, 1, 3) });
    await flush();
    const deleted = (seq: number) => ({ ...message(1, seq), content: "", deleted: true as const });
    t.store.getState().receiveDeleted(deleted(3));
    t.store.getState().receiveDeleted(deleted(2));
    expect(t.store.getState().messages[1]!.items.map((m) => m.deleted ?? false)).toEqual([false, true, true]);
    expect(t.store.getState().conversations[1]!.lastMessage).toMatchObject({ seq: 3, deleted: true });
    // A late copy from before the deletion (a replayed message:new) does not bring it back.
    t.store.getState().receiveMessage(message(1, 3));
    expect(t.store.getState().messages[1]!.items[2]).toMatchObject({ content: "", deleted: true });
    expect(t.store.getState().conversations[1]!.lastMessage).toMatchObject({ deleted: true });
    // One this tab never loaded is not put in its list; its message:new, or a page, arriving after (read before the
    // deletion) shows it deleted all the same, and so does a snapshot's row.
    t.store.getState().receiveDeleted(deleted(4));
    expect(seqs(t.store.getState().messages[1]!.items)).toEqual([1, 2, 3]);
    t.store.getState().receiveMessage(message(1, 4));
    expect(t.store.getState().messages[1]!.items[3]).toMatchObject({ seq: 4, content: "", deleted: true });
    const fresh = snapshot([conversation(1, { lastSeq: 4, lastMessage: message(1, 4) })], 9);
    if (fresh.ok) t.store.getState().applySnapshot(fresh.snapshot);
    expect(t.store.getState().conversations[1]!.lastMessage).toMatchObject({ seq: 4, deleted: true });

    // Deleting one's own: offline it is refused at once; online the acknowledgement shows it.
    t.store.getState().handleDisconnected();
    expect(await t.store.getState().deleteMessage(message(1, 1).id)).toMatch(/offline/);
    expect(t.transport.messageDeletes).toHaveLength(0);
  });

  it("catches a stale cached conversation up when it is opened again", async () => {
    const t = await synced([conversation(1, { lastSeq: 2 }), conversation(2)]);
    t.store.getState().openConversation(1);
    t.transport.fetches[0]?.resolve({ ok: true, messages: range(1, 1, 2) });
    await flush();
    t.store.getState().openConversation(2);
    t.transport.fetches[1]?.resolve({ ok: true, messages: [] });
    await flush();
    t.store.getState().receiveMessage(message(1, 4));
    expect(t.transport.fetches).toHaveLength(2);

    t.store.getState().openConversation(1);
    expect(t.transport.fetches[2]?.input).toEqual({ conversationId: 1, query: { after: 2, limit: 200 } });
  });
});

describe("sending", () => {
  const refusal = (
    code: "invalid" | "forbidden" | "unavailable" | "rate_limited",
    text: string,
    retryAfterMs?: number,
  ) =>
    ({ ok: false, error: { code, message: text, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) } }) as const;
  const pendingOf = (t: Awaited<ReturnType<typeof synced>>, id: number) =>
    t.store.getState().pending[id]?.map((p) => ({ id: p.clientMsgId, status: p.status, error: p.error }));
  const stored = (id: number, seq: number, clientMsgId: string, content = `text ${seq}`) =>
    message(id, seq, { senderId: ME.id, senderName: ME.name, clientMsgId, content });

  it("shows a pending item and inserts the acknowledged message", async () => {
    const t = await synced([conversation(1, { lastSeq: 1 })]);
    const sending = t.store.getState().sendMessage(1, "  hello  ");
    expect(t.store.getState().pending[1]).toMatchObject([{ clientMsgId: "client-1", content: "hello" }]);
    expect(t.transport.sends[0]?.input).toEqual({ conversationId: 1, clientMsgId: "client-1", content: "hello" });

    const ack = stored(1, 2, "client-1", "hello");
    t.transport.sends[0]?.resolve({ ok: true, message: ack });
    expect(await sending).toBe(true);
    const s = t.store.getState();
    expect(s.pending[1]).toEqual([]);
    expect(s.messages[1]?.items).toEqual([ack]);
    expect(s.conversations[1]?.lastMessage).toEqual(ack);
  });

  it("ignores blank messages", async () => {
    const t = await synced([conversation(1)]);
    expect(await t.store.getState().sendMessage(1, " \n ")).toBe(false);
    expect(t.transport.sends).toHaveLength(0);
    expect(t.store.getState().pending[1]).toBeUndefined();
  });

  it("queues sends made offline and sends them after reconnecting, one at a time, in order", async () => {
    const t = await synced([conversation(1), conversation(2)]);
    t.store.getState().handleDisconnected();
    const results = [
      t.store.getState().sendMessage(1, "one"),
      t.store.getState().sendMessage(2, "two"),
      t.store.getState().sendMessage(1, "three"),
    ];
    await flush();
    expect(t.transport.sends).toHaveLength(0);
    expect(pendingOf(t, 1)).toEqual([
      { id: "client-1", status: "queued", error: null },
      { id: "client-3", status: "queued", error: null },
    ]);
    expect(selectQueuedCount(t.store.getState())).toBe(3);

    t.store.getState().handleConnected();
    for (const [i, [id, clientMsgId]] of (
      [
        [1, "client-1"],
        [2, "client-2"],
        [1, "client-3"],
      ] as const
    ).entries()) {
      // The next one goes out only once the one before is acknowledged.
      expect(t.transport.sends).toHaveLength(i + 1);
      expect(t.transport.sends[i]?.input).toMatchObject({ conversationId: id, clientMsgId });
      t.transport.sends[i]?.resolve({ ok: true, message: stored(id, i + 1, clientMsgId) });
      await flush();
    }
    expect(await Promise.all(results)).toEqual([true, true, true]);
    expect(t.transport.sends).toHaveLength(3);
    expect(selectQueuedCount(t.store.getState())).toBe(0);
  });

  it("keeps a message whose acknowledgement is late pending, and the next one waits behind it", async () => {
    const t = await synced([conversation(1)]);
    void t.store.getState().sendMessage(1, "slow");
    await flush();
    expect(pendingOf(t, 1)).toEqual([{ id: "client-1", status: "sending", error: null }]);
    // The composer is free: the next message is taken at once and queued behind.
    void t.store.getState().sendMessage(1, "next");
    expect(pendingOf(t, 1)?.map((p) => p.status)).toEqual(["sending", "queued"]);
    expect(t.transport.sends).toHaveLength(1);
    t.transport.sends[0]?.resolve({ ok: true, message: stored(1, 1, "client-1") });
    await flush();
    expect(t.transport.sends[1]?.input.clientMsgId).toBe("client-2");
  });

  it("resends a message whose acknowledgement timed out with the same clientMsgId, after a backoff", async () => {
    const t = await synced([conversation(1)], { retryDelayMs: 1000 });
    const sending = t.store.getState().sendMessage(1, "hi");
    t.transport.sends[0]?.reject(new Error("operation has timed out"));
    await flush();
    expect(pendingOf(t, 1)).toEqual([{ id: "client-1", status: "queued", error: NO_ANSWER_MESSAGE }]);
    expect(t.transport.sends).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(t.transport.sends).toHaveLength(2);
    t.transport.sends[1]?.reject(new Error("operation has timed out"));
    await flush();
    // The backoff doubles.
    await vi.advanceTimersByTimeAsync(1000);
    expect(t.transport.sends).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1000);
    expect(t.transport.sends).toHaveLength(3);
    t.transport.sends[2]?.resolve({ ok: true, message: stored(1, 1, "client-1") });
    expect(await sending).toBe(true);
    expect(t.transport.sends.map((s) => s.input.clientMsgId)).toEqual(["client-1", "client-1", "client-1"]);
    expect(t.store.getState().pending[1]).toEqual([]);
  });

  it("resends at once on reconnect, with the same clientMsgId, and forgets the stale failure", async () => {
    const t = await synced([conversation(1)], { retryDelayMs: 60_000 });
    void t.store.getState().sendMessage(1, "hi");
    t.transport.sends[0]?.resolve(refusal("unavailable", "The service is temporarily unavailable; try again."));
    await flush();
    expect(pendingOf(t, 1)?.[0]?.error).toMatch(/temporarily unavailable/);

    t.store.getState().handleDisconnected();
    t.store.getState().handleConnected();
    expect(pendingOf(t, 1)).toEqual([{ id: "client-1", status: "sending", error: null }]);
    expect(t.transport.sends.map((s) => s.input.clientMsgId)).toEqual(["client-1", "client-1"]);
  });

  it("puts no note on a message whose attempt failed because the connection dropped", async () => {
    const t = await synced([conversation(1)]);
    void t.store.getState().sendMessage(1, "hi");
    t.store.getState().handleDisconnected();
    t.transport.sends[0]?.reject(new Error("socket has been disconnected"));
    await flush();
    expect(pendingOf(t, 1)).toEqual([{ id: "client-1", status: "queued", error: null }]);
    expect(t.transport.sends).toHaveLength(1);
  });

  it("waits as long as a rate limit says before sending again", async () => {
    const t = await synced([conversation(1)]);
    void t.store.getState().sendMessage(1, "hi");
    t.transport.sends[0]?.resolve(refusal("rate_limited", "Slow down.", 2500));
    await flush();
    expect(pendingOf(t, 1)?.[0]).toMatchObject({ status: "queued", error: "Slow down." });
    await vi.advanceTimersByTimeAsync(2000);
    expect(t.transport.sends).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(500);
    expect(t.transport.sends[1]?.input.clientMsgId).toBe("client-1");
  });

  it("shows a rate limit of minutes on the message as a refusal and moves on to the next", async () => {
    const t = await synced([conversation(1)]);
    const first = t.store.getState().sendMessage(1, "@all lunch?");
    const second = t.store.getState().sendMessage(1, "fine");
    const words = "You have mentioned too many people lately; send it without the @ or try again later.";
    t.transport.sends[0]?.resolve(refusal("rate_limited", words, MAX_SEND_RETRY_MS + 1));
    expect(await first).toBe(false);
    expect(pendingOf(t, 1)?.[0]).toEqual({ id: "client-1", status: "refused", error: words });
    expect(t.transport.sends[1]?.input.clientMsgId).toBe("client-2");
    void second;
  });

  it("shows a refusal on the message, moves on, and lets the person retry or discard", async () => {
    const t = await synced([conversation(1)]);
    const first = t.store.getState().sendMessage(1, "not allowed");
    const second = t.store.getState().sendMessage(1, "fine");
    t.transport.sends[0]?.resolve(refusal("forbidden", "You are not a member of this conversation."));
    expect(await first).toBe(false);
    expect(pendingOf(t, 1)?.[0]).toEqual({
      id: "client-1",
      status: "refused",
      error: "You are not a member of this conversation.",
    });
    // A refusal needs the person's choice; it does not hold up the rest of the queue, nor count as waiting.
    expect(t.transport.sends[1]?.input.clientMsgId).toBe("client-2");
    expect(selectQueuedCount(t.store.getState())).toBe(1);
    t.transport.sends[1]?.resolve({ ok: true, message: stored(1, 1, "client-2") });
    expect(await second).toBe(true);
    await flush();
    expect(t.transport.sends).toHaveLength(2);

    t.store.getState().retryPending(1, "client-1");
    expect(t.transport.sends[2]?.input).toEqual({ conversationId: 1, clientMsgId: "client-1", content: "not allowed" });
    t.transport.sends[2]?.resolve(refusal("invalid", "A message is at most 4000 characters."));
    await flush();
    expect(pendingOf(t, 1)?.[0]).toMatchObject({ status: "refused", error: "A message is at most 4000 characters." });

    t.store.getState().discardPending(1, "client-1");
    expect(t.store.getState().pending[1]).toEqual([]);
    expect(t.store.getState().messages[1]?.items.map((m) => m.clientMsgId)).toEqual(["client-2"]);
  });

  it("never discards a message that may be on its way", async () => {
    const t = await synced([conversation(1)]);
    void t.store.getState().sendMessage(1, "hi");
    t.store.getState().discardPending(1, "client-1");
    expect(pendingOf(t, 1)).toHaveLength(1);
  });

  it("shows the message once when its push overtakes the ack", async () => {
    const t = await synced([conversation(1)]);
    const sending = t.store.getState().sendMessage(1, "hi");
    const ack = stored(1, 1, "client-1", "hi");
    t.store.getState().receiveMessage(ack);
    expect(t.store.getState().pending[1]).toEqual([]);
    t.transport.sends[0]?.resolve({ ok: true, message: ack });
    expect(await sending).toBe(true);
    expect(t.store.getState().messages[1]?.items).toEqual([ack]);
  });

  it("does not send again a message whose push arrived after its acknowledgement was lost", async () => {
    const t = await synced([conversation(1)]);
    const sending = t.store.getState().sendMessage(1, "hi");
    void t.store.getState().sendMessage(1, "after");
    t.store.getState().handleDisconnected();
    t.transport.sends[0]?.reject(new Error("socket has been disconnected"));
    await flush();
    t.store.getState().receiveMessage(stored(1, 1, "client-1", "hi"));
    expect(await sending).toBe(true);
    t.store.getState().handleConnected();
    expect(t.transport.sends.map((s) => s.input.clientMsgId)).toEqual(["client-1", "client-2"]);
  });

  it("keeps a queued message when another member's message carries the same clientMsgId", async () => {
    // clientMsgIds are unique per sender only, and each client picks its own.
    const t = await synced([conversation(1)]);
    t.store.getState().handleDisconnected();
    const sending = t.store.getState().sendMessage(1, "mine");
    t.store.getState().receiveMessage(message(1, 1, { clientMsgId: "client-1" }));
    expect(pendingOf(t, 1)).toEqual([{ id: "client-1", status: "queued", error: null }]);
    t.store.getState().handleConnected();
    expect(t.transport.sends.map((s) => s.input.clientMsgId)).toEqual(["client-1"]);
    t.transport.sends[0]?.resolve({ ok: true, message: stored(1, 2, "client-1", "mine") });
    expect(await sending).toBe(true);
  });

  it("drops queued messages of a conversation a snapshot no longer holds (its removal push was lost)", async () => {
    const t = await synced([conversation(1), conversation(2)]);
    t.store.getState().handleDisconnected();
    const gone = t.store.getState().sendMessage(1, "to nowhere");
    void t.store.getState().sendMessage(2, "still here");
    t.store.getState().handleConnected();
    t.transport.syncs[0]?.resolve(snapshot([conversation(2)], 2));
    await flush();
    expect(t.store.getState().pending[1]).toBeUndefined();
    expect(t.transport.sends.map((s) => s.input.clientMsgId)).toEqual(["client-1"]);
    // Refused (the server no longer counts the sender as a member) or not, it is gone from the queue.
    t.transport.sends[0]?.resolve(refusal("forbidden", "You are not a member of this conversation."));
    expect(await gone).toBe(false);
    await flush();
    expect(t.store.getState().pending[1]).toBeUndefined();
    expect(t.transport.sends.map((s) => s.input.clientMsgId)).toEqual(["client-1", "client-2"]);
  });

  it("drops queued messages of a conversation that went away", async () => {
    const t = await synced([conversation(1), conversation(2)]);
    t.store.getState().handleDisconnected();
    const gone = t.store.getState().sendMessage(1, "to nowhere");
    void t.store.getState().sendMessage(2, "still here");
    t.store.getState().removeConversation(1);
    t.store.getState().handleConnected();
    expect(await gone).toBe(false);
    expect(t.transport.sends.map((s) => s.input.clientMsgId)).toEqual(["client-2"]);
  });
});

describe("drafts", () => {
  it("keeps a draft per user and conversation, clears it once sent, and on sign-out only the user's own", async () => {
    const storage = memoryStorage();
    const me = setup({ drafts: storage });
    const bob = setup({ drafts: storage });
    bob.store.setState({ user: BOB });

    me.store.getState().saveDraft(1, "half a thought");
    me.store.getState().saveDraft(2, "another");
    bob.store.getState().saveDraft(1, "bob's words");
    expect(me.store.getState().draftOf(1)).toBe("half a thought");
    expect(me.store.getState().draftOf(2)).toBe("another");
    expect(bob.store.getState().draftOf(1)).toBe("bob's words");
    expect(bob.store.getState().draftOf(2)).toBe("");
    // A fresh page (a reload) of the same user finds them.
    const reloaded = setup({ drafts: storage });
    expect(reloaded.store.getState().draftOf(1)).toBe("half a thought");

    void me.store.getState().sendMessage(2, "another");
    expect(me.store.getState().draftOf(2)).toBe("");
    expect(storage.getItem(draftKey(ME.id, 2))).toBeNull();
    me.store.getState().saveDraft(1, "");
    expect(storage.getItem(draftKey(ME.id, 1))).toBeNull();

    me.store.getState().saveDraft(1, "left behind");
    await me.store.getState().signOut();
    expect(storage.getItem(draftKey(ME.id, 1))).toBeNull();
    expect(bob.store.getState().draftOf(1)).toBe("bob's words");
  });

  it("keeps working when storage refuses", () => {
    const broken = memoryStorage();
    broken.setItem = () => {
      throw new Error("QuotaExceededError");
    };
    const t = setup({ drafts: broken });
    t.store.getState().saveDraft(1, "x");
    expect(t.store.getState().draftOf(1)).toBe("");
  });
});

describe("session", () => {
  it("restores a session from the cookie, or shows sign-in", async () => {
    const t = setup();
    t.store.setState({ user: null, sessionStatus: "loading" });
    await t.store.getState().restoreSession();
    expect(t.store.getState()).toMatchObject({ sessionStatus: "signedIn", user: ME });

    t.session.signedIn = false;
    t.store.setState({ user: null, sessionStatus: "loading" });
    await t.store.getState().restoreSession();
    expect(t.store.getState()).toMatchObject({ sessionStatus: "signedOut", user: null });
  });

  it("returns the server's error (message and field) for an invalid name, a wrong password or a taken name", async () => {
    const t = setup();
    const password = "right password";
    expect((await t.store.getState().signIn({ name: "no spaces", password }))?.message).toMatch(/1–32 characters/);
    expect((await t.store.getState().signIn({ name: "alice", password: "wrong" }))?.message).toBe(
      "Wrong name or password.",
    );
    expect(await t.store.getState().signIn({ name: "taken", password }, true)).toEqual({
      code: "conflict",
      message: "taken",
      field: "name",
    });
    expect(t.store.getState().user?.name).toBe("me");
    expect(await t.store.getState().signIn({ name: "alice", password })).toBeNull();
    expect(t.store.getState().user?.name).toBe("alice");
  });

  it("forgets everything on sign-out and drops late answers", async () => {
    const t = await synced([conversation(1, { unreadCount: 2 })]);
    t.store.getState().setVisible(true);
    const sending = t.store.getState().sendMessage(1, "late");
    t.store.getState().requestSync();
    await t.store.getState().signOut();
    t.transport.sends[0]?.resolve({ ok: true, message: message(1, 1) });
    t.transport.syncs[0]?.resolve(snapshot([conversation(1, { unreadCount: 2 })], 5));
    await sending;
    await flush();
    expect(t.store.getState()).toMatchObject({
      user: null,
      sessionStatus: "signedOut",
      conversationOrder: [],
      messages: {},
      totalUnread: 0,
      epoch: null,
      visible: true,
    });
  });

  it("signs out locally when a refused socket finds the cookie gone", async () => {
    const t = await synced([conversation(1)]);
    expect(await t.store.getState().verifySession()).toBe(true);
    t.session.signedIn = false;
    expect(await t.store.getState().verifySession()).toBe(false);
    expect(t.store.getState().sessionStatus).toBe("signedOut");
  });
});
