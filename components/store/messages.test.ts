import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ConversationDTO, MessageDTO } from "@/server/contracts";
import { conversation, flush, message, ME, setup, snapshot } from "./fake-transport";
import { extendTail, mergeMessages, NO_ANSWER_MESSAGE, PAGE_SIZE } from "./messages";

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

async function synced(conversations: ConversationDTO[]) {
  const t = setup();
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

  it("on reconnect, syncs and fetches the open conversation after the last loaded seq", async () => {
    const t = await synced([conversation(1, { lastSeq: 3 }), conversation(2, { lastSeq: 1 })]);
    t.store.getState().openConversation(1);
    t.transport.fetches[0]?.resolve({ ok: true, messages: range(1, 1, 3) });
    await flush();

    t.store.getState().handleDisconnected();
    t.store.getState().handleConnected();
    expect(t.transport.syncs).toHaveLength(1);
    t.transport.syncs[0]?.resolve(snapshot([conversation(1, { lastSeq: 6 }), conversation(2, { lastSeq: 1 })], 4));
    await flush();
    expect(t.transport.fetches[1]?.input).toEqual({ conversationId: 1, query: { after: 3, limit: 200 } });
    t.transport.fetches[1]?.resolve({ ok: true, messages: range(1, 4, 6) });
    await flush();
    expect(seqs(t.store.getState().messages[1]?.items)).toEqual([1, 2, 3, 4, 5, 6]);
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
  it("shows a pending item and inserts the acknowledged message", async () => {
    const t = await synced([conversation(1, { lastSeq: 1 })]);
    const sending = t.store.getState().sendMessage(1, "  hello  ");
    expect(t.store.getState().pending[1]).toMatchObject([{ clientMsgId: "client-1", content: "hello" }]);
    expect(t.transport.sends[0]?.input).toEqual({ conversationId: 1, clientMsgId: "client-1", content: "hello" });

    const stored = message(1, 2, { senderId: ME.id, clientMsgId: "client-1", content: "hello" });
    t.transport.sends[0]?.resolve({ ok: true, message: stored });
    expect(await sending).toBe(true);
    const s = t.store.getState();
    expect(s.pending[1]).toEqual([]);
    expect(s.messages[1]?.items).toEqual([stored]);
    expect(s.conversations[1]?.lastMessage).toEqual(stored);
  });

  it("ignores blank messages", async () => {
    const t = await synced([conversation(1)]);
    expect(await t.store.getState().sendMessage(1, " \n ")).toBe(false);
    expect(t.transport.sends).toHaveLength(0);
  });

  it("shows the server's error and drops the pending item", async () => {
    const t = await synced([conversation(1)]);
    const sending = t.store.getState().sendMessage(1, "x".repeat(5000));
    t.transport.sends[0]?.resolve({ ok: false, error: { code: "invalid", message: "Message too long" } });
    expect(await sending).toBe(false);
    expect(t.store.getState().sendErrors[1]).toBe("Message too long");
    expect(t.store.getState().pending[1]).toEqual([]);

    t.store.getState().clearSendError(1);
    expect(t.store.getState().sendErrors[1]).toBeUndefined();
  });

  it("retries with the same clientMsgId when the ack times out", async () => {
    const t = await synced([conversation(1)]);
    const sending = t.store.getState().sendMessage(1, "hi");
    t.transport.sends[0]?.reject(new Error("operation has timed out"));
    await flush();
    t.transport.sends[1]?.reject(new Error("operation has timed out"));
    await flush();
    t.transport.sends[2]?.resolve({ ok: true, message: message(1, 1, { clientMsgId: "client-1" }) });
    expect(await sending).toBe(true);
    expect(t.transport.sends.map((s) => s.input.clientMsgId)).toEqual(["client-1", "client-1", "client-1"]);
  });

  it("gives up after three unanswered attempts", async () => {
    const t = await synced([conversation(1)]);
    const sending = t.store.getState().sendMessage(1, "hi");
    for (let i = 0; i < 3; i++) {
      t.transport.sends[i]?.reject(new Error("operation has timed out"));
      await flush();
    }
    expect(await sending).toBe(false);
    expect(t.transport.sends).toHaveLength(3);
    expect(t.store.getState().sendErrors[1]).toBe(NO_ANSWER_MESSAGE);
    expect(t.store.getState().pending[1]).toEqual([]);
  });

  it("shows the message once when its push overtakes the ack", async () => {
    const t = await synced([conversation(1)]);
    const sending = t.store.getState().sendMessage(1, "hi");
    const stored = message(1, 1, { senderId: ME.id, clientMsgId: "client-1", content: "hi" });
    t.store.getState().receiveMessage(stored);
    expect(t.store.getState().pending[1]).toEqual([]);
    t.transport.sends[0]?.resolve({ ok: true, message: stored });
    await sending;
    expect(t.store.getState().messages[1]?.items).toEqual([stored]);
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

  it("returns the server's message for an invalid name, a wrong password or a taken name", async () => {
    const t = setup();
    const password = "right password";
    expect(await t.store.getState().signIn({ name: "no spaces", password })).toMatch(/letters/);
    expect(await t.store.getState().signIn({ name: "alice", password: "wrong" })).toBe("Wrong name or password.");
    expect(await t.store.getState().signIn({ name: "taken", password }, true)).toBe("taken");
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
