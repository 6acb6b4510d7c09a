import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { UserDTO } from "@/server/contracts";
import { memoryStorage } from "./drafts";
import {
  BOB,
  conversation,
  createFakeSession,
  createFakeTransport,
  flush,
  message,
  ME,
  snapshot,
} from "./fake-transport";
import { createChatStore } from "./index";
import { queueKey, readQueue } from "./saved-queue";
import type { QueueStorage } from "./types";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/**
 * One page load of a tab whose sessionStorage is `storage`: a new store, signed in as `user` from the cookie. Ids
 * made here start with `name`, so a restored message can be told from a new one.
 */
async function pageLoad(name: string, storage: QueueStorage, user: UserDTO = ME) {
  const transport = createFakeTransport();
  const session = createFakeSession(user);
  let ids = 0;
  const store = createChatStore({
    transport,
    session,
    newId: () => `${name}-${++ids}`,
    retryDelayMs: 0,
    staleUnreadMs: 60_000,
    queueStorage: storage,
  });
  await store.getState().restoreSession();
  return { store, transport, session };
}

type Tab = Awaited<ReturnType<typeof pageLoad>>;

async function connect(t: Tab, conversations = [conversation(1), conversation(2)]): Promise<void> {
  t.store.getState().handleConnected();
  t.transport.syncs.at(-1)?.resolve(snapshot(conversations, 1));
  await flush();
}

const stored = (conversationId: number, seq: number, clientMsgId: string, content: string, user = ME) =>
  message(conversationId, seq, { senderId: user.id, senderName: user.name, clientMsgId, content });

const shown = (t: Tab, conversationId: number) =>
  t.store.getState().pending[conversationId]?.map((p) => [p.clientMsgId, p.content, p.status, p.error]);

const saved = (storage: QueueStorage, user: UserDTO = ME) =>
  readQueue(storage, user.id).items.map((i) => [i.conversationId, i.clientMsgId, i.refused]);

describe("the send queue across a reload of the tab", () => {
  it("comes back in order with the same clientMsgIds, refusals still refused, and each leaves once stored", async () => {
    const storage = memoryStorage();
    const first = await pageLoad("first", storage);
    await connect(first);
    void first.store.getState().sendMessage(1, "bad");
    first.transport.sends[0]?.resolve({ ok: false, error: { code: "invalid", message: "Not allowed." } });
    await flush();
    first.store.getState().handleDisconnected();
    for (const [id, text] of [
      [1, "one"],
      [2, "two"],
      [1, "three"],
    ] as const) {
      void first.store.getState().sendMessage(id, text);
    }
    // "one" is on the wire when the page goes: it may or may not have been stored.
    first.store.getState().handleConnected();
    expect(first.transport.sends[1]?.input).toEqual({ conversationId: 1, clientMsgId: "first-2", content: "one" });

    const second = await pageLoad("second", storage);
    expect(shown(second, 1)).toEqual([
      ["first-1", "bad", "refused", "Not allowed."],
      ["first-2", "one", "queued", null],
      ["first-4", "three", "queued", null],
    ]);
    expect(shown(second, 2)).toEqual([["first-3", "two", "queued", null]]);
    expect(second.transport.sends).toHaveLength(0);

    await connect(second);
    const order: [number, string, string][] = [
      [1, "first-2", "one"],
      [2, "first-3", "two"],
      [1, "first-4", "three"],
    ];
    for (const [i, [id, clientMsgId, content]] of order.entries()) {
      expect(second.transport.sends).toHaveLength(i + 1);
      expect(second.transport.sends[i]?.input).toEqual({ conversationId: id, clientMsgId, content });
      second.transport.sends[i]?.resolve({ ok: true, message: stored(id, i + 1, clientMsgId, content) });
      await flush();
      expect(saved(storage).map(([, clientMsgId]) => clientMsgId)).not.toContain(clientMsgId);
    }
    expect(second.transport.sends).toHaveLength(3);
    expect(saved(storage)).toEqual([[1, "first-1", "Not allowed."]]);

    second.store.getState().discardPending(1, "first-1");
    expect(storage.getItem(queueKey(ME.id))).toBeNull();
    const third = await pageLoad("third", storage);
    await connect(third);
    expect(third.store.getState().pending).toEqual({});
    expect(third.transport.sends).toHaveLength(0);
  });

  it("keeps the order of a retried refusal, which goes after the messages queued before the retry", async () => {
    const storage = memoryStorage();
    const first = await pageLoad("first", storage);
    await connect(first);
    void first.store.getState().sendMessage(1, "refused once");
    first.transport.sends[0]?.resolve({ ok: false, error: { code: "forbidden", message: "No." } });
    await flush();
    first.store.getState().handleDisconnected();
    void first.store.getState().sendMessage(2, "later");
    first.store.getState().retryPending(1, "first-1");

    const second = await pageLoad("second", storage);
    await connect(second);
    expect(second.transport.sends.map((s) => s.input.clientMsgId)).toEqual(["first-2"]);
    second.transport.sends[0]?.resolve({ ok: true, message: stored(2, 1, "first-2", "later") });
    await flush();
    expect(second.transport.sends.map((s) => s.input.clientMsgId)).toEqual(["first-2", "first-1"]);
  });

  it("takes a restored message off the queue when its push shows it was stored before the reload", async () => {
    const storage = memoryStorage();
    const first = await pageLoad("first", storage);
    await connect(first);
    first.store.getState().handleDisconnected();
    void first.store.getState().sendMessage(1, "stored, ack lost");
    void first.store.getState().sendMessage(1, "next");

    const second = await pageLoad("second", storage);
    second.store.getState().receiveMessage(stored(1, 1, "first-1", "stored, ack lost"));
    await connect(second, [conversation(1, { lastSeq: 1 })]);
    expect(second.transport.sends.map((s) => s.input.clientMsgId)).toEqual(["first-2"]);
    expect(saved(storage)).toEqual([[1, "first-2", null]]);
  });

  it("restores nothing for another user in the same tab, and leaves that user's queue alone", async () => {
    const storage = memoryStorage();
    const mine = await pageLoad("mine", storage);
    await connect(mine);
    mine.store.getState().handleDisconnected();
    void mine.store.getState().sendMessage(1, "only for me");

    const bobs = await pageLoad("bob", storage, BOB);
    await connect(bobs);
    expect(bobs.store.getState().pending).toEqual({});
    expect(bobs.transport.sends).toHaveLength(0);
    void bobs.store.getState().sendMessage(1, "bob's own");
    expect(saved(storage, BOB)).toEqual([[1, "bob-1", null]]);
    expect(saved(storage)).toEqual([[1, "mine-1", null]]);

    const again = await pageLoad("again", storage);
    expect(shown(again, 1)).toEqual([["mine-1", "only for me", "queued", null]]);
  });

  it("keeps the queue through sign-out, for the same user's next sign-in in this tab only", async () => {
    const storage = memoryStorage();
    const t = await pageLoad("tab", storage);
    await connect(t);
    t.store.getState().handleDisconnected();
    void t.store.getState().sendMessage(1, "sent while offline");
    await t.store.getState().signOut();
    expect(t.store.getState().pending).toEqual({});
    expect(saved(storage)).toEqual([[1, "tab-1", null]]);

    expect(await t.store.getState().signIn({ name: "me", password: "right password" })).toBeNull();
    expect(shown(t, 1)).toEqual([["tab-1", "sent while offline", "queued", null]]);
    await connect(t);
    expect(t.transport.sends.map((s) => s.input)).toEqual([
      { conversationId: 1, clientMsgId: "tab-1", content: "sent while offline" },
    ]);
  });

  it("drops restored messages of a conversation the snapshot no longer holds", async () => {
    const storage = memoryStorage();
    const first = await pageLoad("first", storage);
    await connect(first);
    first.store.getState().handleDisconnected();
    void first.store.getState().sendMessage(1, "to a conversation left meanwhile");
    void first.store.getState().sendMessage(2, "still a member");

    const second = await pageLoad("second", storage);
    second.store.getState().requestSync();
    second.transport.syncs[0]?.resolve(snapshot([conversation(2)], 1));
    await flush();
    expect(second.store.getState().pending[1]).toBeUndefined();
    expect(saved(storage)).toEqual([[2, "first-2", null]]);
    await connect(second, [conversation(2)]);
    expect(second.transport.sends.map((s) => s.input.clientMsgId)).toEqual(["first-2"]);
  });

  it("ignores a saved queue it cannot read", async () => {
    const storage = memoryStorage();
    storage.setItem(queueKey(ME.id), "{not json");
    const t = await pageLoad("tab", storage);
    expect(t.store.getState().pending).toEqual({});
    const refusing: QueueStorage = {
      getItem: () => {
        throw new Error("SecurityError");
      },
      setItem: () => {
        throw new Error("QuotaExceededError");
      },
      removeItem: () => {
        throw new Error("SecurityError");
      },
    };
    const blocked = await pageLoad("blocked", refusing);
    await connect(blocked);
    void blocked.store.getState().sendMessage(1, "still sent");
    expect(blocked.transport.sends[0]?.input.content).toBe("still sent");
  });
});
