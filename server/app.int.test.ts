import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { io as connect } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ConversationDTO, MemberLeft, MessageDTO, UnreadUpdate } from "./contracts/index.ts";
import { nextEvent, startHarness, TEST_PASSWORD, type ClientSocket, type Harness } from "./testing/harness.ts";
import { isClusterTarget } from "./redis/client.ts";
import { userKeys } from "./redis/keys.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness(2);
});
afterAll(() => h.close());

let n = 0;
const unique = (base: string) => `${base}_${Date.now().toString(36)}${n++}`;

async function user(base: string) {
  return h.signUp(unique(base));
}

async function direct(token: string, otherName: string): Promise<ConversationDTO> {
  const res = await h.http("/api/conversations", {
    method: "POST",
    token,
    body: JSON.stringify({ memberNames: [otherName] }),
  });
  expect(res.status).toBe(200);
  return res.body.conversation as ConversationDTO;
}

function send(socket: ClientSocket, conversationId: number, content: string, clientMsgId = randomUUID()) {
  return socket.emitWithAck("message:send", { conversationId, clientMsgId, content });
}

/** Two new users, Alice and Bob, and the direct conversation Alice started with Bob. */
async function aliceAndBob() {
  const alice = await user("alice");
  const bob = await user("bob");
  return { alice, bob, conv: await direct(alice.token, bob.user.name) };
}

/** The same, with Alice connected to instance 0 to send. */
async function aliceSendingToBob() {
  const pair = await aliceAndBob();
  return { ...pair, sender: await h.connect(pair.alice.token, 0) };
}

async function snapshot(token: string) {
  const res = await h.http("/api/conversations", { token });
  expect(res.status).toBe(200);
  return res.body as { conversations: ConversationDTO[]; totalUnread: number; version: number; epoch: string };
}

describe("two instances, one Redis", () => {
  it.runIf(!isClusterTarget(inject("redisTarget")))(
    "a message crosses to the other instances as one published delivery, however many of its pushes change",
    async () => {
      const { alice, bob, conv, sender } = await aliceSendingToBob();
      const tab = await h.connect(bob.token, 1);
      await send(sender, conv.id, "warm-up");
      const publishes = async () => {
        const stats = await h.redis.info("commandstats");
        return Number(/cmdstat_publish:calls=(\d+)/.exec(stats)?.[1] ?? 0);
      };
      const before = await publishes();
      // Every command Redis runs meanwhile, with who ran it: a client's address, or "lua" inside a script.
      const monitor = await (h.redis as Redis).monitor();
      const seen: { args: string[]; source: string }[] = [];
      monitor.on("monitor", (_time: string, args: string[], source: string) => seen.push({ args, source }));
      const pushed = Promise.all([nextEvent(tab, "message:new"), nextEvent(tab, "unread:changed")]);
      expect(await send(sender, conv.id, "one message between instances")).toMatchObject({ ok: true });
      const [, update] = await pushed;
      expect(update).toMatchObject({ conversationId: conv.id, unreadCount: 2 });
      await monitor.disconnect();
      // message:new to both members and bob's unread:changed: one PUBLISH, run by the script that applied both
      // members' counters (deliver.lua): one Redis call from the sending instance for the counters and the push.
      expect((await publishes()) - before).toBe(1);
      const published = seen.filter((c) => c.args[0]?.toLowerCase() === "publish");
      expect(published.map((c) => [c.source, c.args[1]])).toEqual([["lua", "tally:deliveries"]]);
      const both = seen.filter(
        (c) =>
          c.source !== "lua" &&
          c.args.includes(userKeys(alice.user.id).meta) &&
          c.args.includes(userKeys(bob.user.id).meta),
      );
      expect(both.map((c) => c.args[0]?.toLowerCase())).toEqual(["evalsha"]);
    },
  );

  it.runIf(!isClusterTarget(inject("redisTarget")))(
    "each tab hears a message once, on the sending instance too (Redis hands the publication back to its publisher)",
    async () => {
      const { bob, conv, sender } = await aliceSendingToBob();
      const tabs = [await h.connect(bob.token, 0), await h.connect(bob.token, 1)];
      const heard = tabs.map((tab) => {
        const seqs: number[] = [];
        tab.on("message:new", ({ message }) => seqs.push(message.seq));
        return seqs;
      });
      for (const content of ["one", "two", "three"]) {
        const arrived = tabs.map((tab) => nextEvent(tab, "message:new", ({ message }) => message.content === content));
        expect(await send(sender, conv.id, content)).toMatchObject({ ok: true });
        await Promise.all(arrived);
      }
      // Let through, the echoes reach the first tab too (seen: each message twice there).
      expect(heard).toEqual([
        [1, 2, 3],
        [1, 2, 3],
      ]);
    },
  );

  it("pushes a delivery that names no member to nobody (Socket.IO's to([]) would reach every socket)", async () => {
    const { bob, conv, sender } = await aliceSendingToBob();
    const here = await h.connect(bob.token, 0);
    const there = await h.connect(bob.token, 1);
    const firsts = [here, there].map((tab) => nextEvent(tab, "message:new"));
    // A replay of a message whose conversation has no member left reads no members.
    const orphan: MessageDTO = {
      id: 999_999,
      conversationId: conv.id,
      seq: 999,
      senderId: 0,
      senderName: "nobody",
      content: "to no one",
      createdAt: new Date().toISOString(),
      clientMsgId: "orphan",
    };
    h.instances[0]!.app.notifier.messageDelivered({ memberIds: [], message: orphan, updates: [] });
    expect(await send(sender, conv.id, "to bob")).toMatchObject({ ok: true });
    // Pushes from one instance keep their order: the first each tab hears is the real message.
    for (const first of await Promise.all(firsts))
      expect((first as { message: MessageDTO }).message.content).toBe("to bob");
  });

  it("a message sent through instance 1 updates the recipient's tabs on instances 1 and 2", async () => {
    const { alice, bob, conv, sender } = await aliceSendingToBob();
    const tab1 = await h.connect(bob.token, 0);
    const tab2 = await h.connect(bob.token, 1);

    const waits = [tab1, tab2].map((tab) =>
      Promise.all([nextEvent(tab, "message:new"), nextEvent(tab, "unread:changed")]),
    );
    const ack = await send(sender, conv.id, "hello across instances");
    expect(ack).toMatchObject({
      ok: true,
      message: { seq: 1, content: "hello across instances", senderName: alice.user.name },
    });

    for (const [msg, unread] of await Promise.all(waits)) {
      expect((msg as { message: MessageDTO }).message.seq).toBe(1);
      expect(unread).toMatchObject({ conversationId: conv.id, unreadCount: 1, totalUnread: 1 });
    }
    const list = await snapshot(bob.token);
    expect(list.totalUnread).toBe(1);
    expect(list.conversations.find((c) => c.id === conv.id)).toMatchObject({
      unreadCount: 1,
      lastSeq: 1,
      lastReadSeq: 0,
    });
    // The sender's own message is not unread for them.
    expect((await snapshot(alice.token)).totalUnread).toBe(0);
  });

  it("reading in one tab clears the badge in the user's tabs on both instances", async () => {
    const { bob, conv, sender } = await aliceSendingToBob();
    const tab1 = await h.connect(bob.token, 0);
    const tab2 = await h.connect(bob.token, 1);
    await send(sender, conv.id, "one");
    await send(sender, conv.id, "two");

    const cleared = [tab1, tab2].map((t) => nextEvent(t, "unread:changed", (u) => u.unreadCount === 0));
    const ack = await tab1.emitWithAck("conversation:read", { conversationId: conv.id, seq: 2 });
    expect(ack).toMatchObject({ ok: true, unread: { conversationId: conv.id, unreadCount: 0, totalUnread: 0 } });
    for (const u of await Promise.all(cleared)) expect(u.totalUnread).toBe(0);
  });

  it("a send reads nothing: messages the sender has not seen stay unread until a read passes them", async () => {
    // Bob has two unseen messages from alice when his reply goes out (sent from the divider, or queued offline).
    const { bob, conv, sender } = await aliceSendingToBob();
    const tab = await h.connect(bob.token, 0);
    await send(sender, conv.id, "one");
    await send(sender, conv.id, "two");
    const reply = await send(tab, conv.id, "a reply above what I have not seen");
    expect(reply).toMatchObject({ ok: true, message: { seq: 3 } });
    let list = await snapshot(bob.token);
    expect(list.totalUnread).toBe(2);
    expect(list.conversations.find((c) => c.id === conv.id)).toMatchObject({ unreadCount: 2, lastReadSeq: 0 });
    // A read of the first leaves the second; reading the second moves the cursor over his own message too.
    expect(await tab.emitWithAck("conversation:read", { conversationId: conv.id, seq: 1 })).toMatchObject({
      ok: true,
      unread: { unreadCount: 1, totalUnread: 1 },
    });
    expect(await tab.emitWithAck("conversation:read", { conversationId: conv.id, seq: 2 })).toMatchObject({
      ok: true,
      unread: { unreadCount: 0, totalUnread: 0 },
    });
    list = await snapshot(bob.token);
    expect(list.conversations.find((c) => c.id === conv.id)).toMatchObject({ unreadCount: 0, lastReadSeq: 3 });
    // Caught up, his next message moves the cursor over it at once.
    await send(tab, conv.id, "and another");
    expect((await snapshot(bob.token)).conversations.find((c) => c.id === conv.id)).toMatchObject({
      unreadCount: 0,
      lastReadSeq: 4,
    });
  });

  it("a retried send (same clientMsgId) creates one message and one unread", async () => {
    const { alice, bob, conv, sender } = await aliceSendingToBob();
    const otherTab = await h.connect(alice.token, 1);
    const clientMsgId = randomUUID();
    const [a, b] = await Promise.all([
      send(sender, conv.id, "only once", clientMsgId),
      send(otherTab, conv.id, "only once", clientMsgId),
    ]);
    const c = await send(sender, conv.id, "only once", clientMsgId);
    expect(a.ok && b.ok && c.ok).toBe(true);
    const ids = [a, b, c].map((r) => (r.ok ? r.message.id : -1));
    expect(new Set(ids).size).toBe(1);
    expect(await h.db.message.count({ where: { conversationId: conv.id } })).toBe(1);
    const list = await snapshot(bob.token);
    expect(list.totalUnread).toBe(1);
    expect(list.conversations.find((x) => x.id === conv.id)?.unreadCount).toBe(1);
  });

  it("reading up to a seq leaves later messages unread, and reads never move the cursor back", async () => {
    const { bob, conv, sender } = await aliceSendingToBob();
    const reader = await h.connect(bob.token, 1);
    for (const text of ["1", "2", "3", "4", "5"]) await send(sender, conv.id, text);

    const ack = await reader.emitWithAck("conversation:read", { conversationId: conv.id, seq: 3 });
    expect(ack).toMatchObject({ ok: true, unread: { unreadCount: 2, totalUnread: 2 } });
    const back = await reader.emitWithAck("conversation:read", { conversationId: conv.id, seq: 1 });
    expect(back).toMatchObject({ ok: true, unread: { unreadCount: 2 } });
    // A read past the end is clamped to lastSeq: the next message still counts.
    await reader.emitWithAck("conversation:read", { conversationId: conv.id, seq: 999 });
    await send(sender, conv.id, "6");
    const list = await snapshot(bob.token);
    expect(list.conversations.find((c) => c.id === conv.id)).toMatchObject({ unreadCount: 1, lastReadSeq: 5 });
    const membership = await h.db.membership.findUniqueOrThrow({
      where: { userId_conversationId: { userId: bob.user.id, conversationId: conv.id } },
    });
    expect(membership.lastReadSeq).toBe(5);
  });

  it("a group message raises the other members' badges, not the sender's", async () => {
    const [a, b, c] = [await user("ann"), await user("ben"), await user("cat")];
    const res = await h.http("/api/conversations", {
      method: "POST",
      token: a.token,
      body: JSON.stringify({ memberNames: [b.user.name, c.user.name], title: "Trio" }),
    });
    expect(res.body.conversation).toMatchObject({ kind: "group", title: "Trio" });
    const convId = res.body.conversation.id as number;
    const sender = await h.connect(a.token, 1);
    await send(sender, convId, "hi all");
    expect((await snapshot(a.token)).totalUnread).toBe(0);
    expect((await snapshot(b.token)).totalUnread).toBe(1);
    expect((await snapshot(c.token)).totalUnread).toBe(1);
  });

  it("sync returns the same snapshot as the HTTP list, atomically read", async () => {
    const { bob, conv, sender } = await aliceSendingToBob();
    await send(sender, conv.id, "x");
    const tab = await h.connect(bob.token, 1);
    const ack = await tab.emitWithAck("sync");
    expect(ack.ok).toBe(true);
    const http = await snapshot(bob.token);
    if (!ack.ok) return;
    expect({ ok: true, ...ack.snapshot }).toEqual(http);
    expect(ack.snapshot.totalUnread).toBe(ack.snapshot.conversations.reduce((s, c) => s + c.unreadCount, 0));
  });
});

describe("access and validation", () => {
  it("a non-member gets forbidden and learns nothing, on every route", async () => {
    const { conv } = await aliceAndBob();
    const eve = await user("eve");
    const intruder = await h.connect(eve.token, 0);
    const sendAck = await send(intruder, conv.id, "let me in");
    const readAck = await intruder.emitWithAck("conversation:read", { conversationId: conv.id, seq: 1 });
    const missingAck = await send(intruder, 987654, "nobody here");
    for (const ack of [sendAck, readAck, missingAck]) {
      expect(ack).toEqual({ ok: false, error: { code: "forbidden", message: expect.any(String) } });
    }
    const history = await h.http(`/api/conversations/${conv.id}/messages`, { token: eve.token });
    expect(history.status).toBe(403);
    expect(history.body.error.code).toBe("forbidden");
    expect(await h.db.message.count({ where: { conversationId: conv.id } })).toBe(0);
  });

  it("an invalid token cannot connect", async () => {
    const attempts = ["not-a-token", "1.abc.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", undefined].map(
      (token) =>
        new Promise<Error>((resolve, reject) => {
          const s = connect(h.instances[0]!.url, {
            auth: token ? { token } : {},
            transports: ["websocket"],
            forceNew: true,
            reconnection: false,
          });
          s.on("connect", () => reject(new Error(`connected with ${token}`)));
          s.on("connect_error", (err) => {
            s.disconnect();
            resolve(err);
          });
        }),
    );
    for (const err of await Promise.all(attempts)) expect(err.message).toBe("unauthorized");
  });

  it("bad payloads get `invalid` and change nothing", async () => {
    const { alice, conv, sender: s } = await aliceSendingToBob();
    const bad: unknown[] = [
      { conversationId: conv.id, clientMsgId: "x", content: "   " },
      { conversationId: conv.id, clientMsgId: "x", content: "a".repeat(4001) },
      { conversationId: "1", clientMsgId: "x", content: "hi" },
      { conversationId: conv.id, content: "hi" },
      { conversationId: conv.id, clientMsgId: "x", content: "hi", extra: true },
      null,
      "hello",
    ];
    for (const payload of bad) {
      const ack = await s.emitWithAck("message:send", payload as never);
      expect(ack).toMatchObject({ ok: false, error: { code: "invalid" } });
    }
    const badRead = await s.emitWithAck("conversation:read", { conversationId: conv.id, seq: -1 });
    expect(badRead).toMatchObject({ ok: false, error: { code: "invalid" } });
    expect(await h.db.message.count({ where: { conversationId: conv.id } })).toBe(0);

    for (const name of ["", "has space", "x".repeat(33), "ünïcode"]) {
      const res = await h.http("/api/session", {
        method: "POST",
        body: JSON.stringify({ name, password: TEST_PASSWORD }),
      });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("invalid");
    }
    expect((await h.http("/api/session", { method: "POST", body: "{not json" })).body.error.code).toBe("invalid");
    expect((await h.http("/api/conversations")).status).toBe(401);
    expect((await h.http("/api/conversations", { token: "forged.token.x" })).body.error.code).toBe("unauthorized");
    const unknown = await h.http("/api/conversations", {
      method: "POST",
      token: alice.token,
      body: JSON.stringify({ memberNames: ["nobody_" + n] }),
    });
    expect(unknown.status).toBe(404);
    expect((await h.http(`/api/conversations/${conv.id}/messages?limit=500`, { token: alice.token })).status).toBe(400);
    expect((await h.http(`/api/conversations/abc/messages`, { token: alice.token })).status).toBe(400);
  });

  it("a content is stored trimmed; history pages are ascending and bounded", async () => {
    const { bob, conv, sender: s } = await aliceSendingToBob();
    for (let i = 1; i <= 7; i++) await send(s, conv.id, `  m${i}  `);
    const latest = await h.http(`/api/conversations/${conv.id}/messages?limit=3`, { token: bob.token });
    expect(latest.body.messages.map((m: MessageDTO) => m.content)).toEqual(["m5", "m6", "m7"]);
    const older = await h.http(`/api/conversations/${conv.id}/messages?limit=3&before=5`, { token: bob.token });
    expect(older.body.messages.map((m: MessageDTO) => m.seq)).toEqual([2, 3, 4]);
    const after = await h.http(`/api/conversations/${conv.id}/messages?after=5`, { token: bob.token });
    expect(after.body.messages.map((m: MessageDTO) => m.seq)).toEqual([6, 7]);
  });

  it("history names the group's members who left, oldest first, whatever the page; a direct conversation none", async () => {
    const { alice, bob, conv: pair, sender } = await aliceSendingToBob();
    const carol = await user("carol");
    const dave = await user("dave");
    const created = await h.http("/api/conversations", {
      method: "POST",
      token: alice.token,
      body: JSON.stringify({ memberNames: [bob.user.name, carol.user.name, dave.user.name], title: "Leavers" }),
    });
    const group = created.body.conversation as ConversationDTO;
    await send(sender, group.id, "before anyone left");
    for (const who of [carol, bob]) {
      const res = await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: who.token });
      expect(res.status).toBe(200);
    }
    await send(sender, group.id, "after");
    const page = (query: string) => h.http(`/api/conversations/${group.id}/messages${query}`, { token: dave.token });
    const latest = await page("");
    expect(latest.body.left.map((l: MemberLeft) => [l.userId, l.name])).toEqual([
      [carol.user.id, carol.user.name],
      [bob.user.id, bob.user.name],
    ]);
    const [first, last] = latest.body.messages as MessageDTO[];
    const times = latest.body.left.map((l: MemberLeft) => l.at);
    // Between the two messages, in the order they left.
    expect(first!.createdAt <= times[0] && times[0] <= times[1] && times[1] <= last!.createdAt).toBe(true);
    expect((await page("?before=2")).body.left).toEqual(latest.body.left);
    expect((await page("?after=1")).body.left).toEqual(latest.body.left);
    // Those who left read no more of it, and a direct conversation has nobody who left.
    expect((await h.http(`/api/conversations/${group.id}/messages`, { token: bob.token })).status).toBe(403);
    expect((await h.http(`/api/conversations/${pair.id}/messages`, { token: alice.token })).body.left).toEqual([]);
  });

  it("the same direct conversation is returned for the pair", async () => {
    const { alice, bob, conv: a } = await aliceAndBob();
    const b = await direct(bob.token, alice.user.name);
    expect(b.id).toBe(a.id);
    expect(b.title).toBe(alice.user.name);
  });

  it("names people in any letter case, as sign-in does: the same account, and one's own name is still oneself", async () => {
    const { alice, bob, conv: a } = await aliceAndBob();
    expect((await direct(bob.token, alice.user.name.toUpperCase())).id).toBe(a.id);
    const carol = await user("carol");
    const create = (token: string, memberNames: string[]) =>
      h.http("/api/conversations", { method: "POST", token, body: JSON.stringify({ memberNames, title: "Cased" }) });
    const group = await create(alice.token, [
      bob.user.name.toUpperCase(),
      carol.user.name,
      carol.user.name.toUpperCase(),
    ]);
    expect(group.status).toBe(200);
    const names = (group.body.conversation as ConversationDTO).members.map((m) => m.name).sort();
    expect(names).toEqual([alice.user.name, bob.user.name, carol.user.name].sort());
    expect(await create(alice.token, [alice.user.name.toUpperCase()])).toMatchObject({
      status: 400,
      body: { error: { code: "invalid", message: "Name someone other than yourself to start a conversation with." } },
    });
    expect(await create(alice.token, ["Nobody_Here_At_All"])).toMatchObject({
      status: 404,
      body: { error: { code: "not_found", message: "No user called 'Nobody_Here_At_All'." } },
    });
  });

  it("health answers ok when Redis and the database answer", async () => {
    expect(await h.http("/api/health")).toEqual({ status: 200, body: { ok: true } });
  });
});

describe("Redis state lost", () => {
  it("rebuilds a user's counters from the database on first touch, with a new epoch the client notices", async () => {
    const { bob, conv, sender } = await aliceSendingToBob();
    const tab = await h.connect(bob.token, 1);
    await send(sender, conv.id, "before");
    const before = await snapshot(bob.token);
    expect(before.totalUnread).toBe(1);

    const k = userKeys(bob.user.id);
    await h.redis.del(k.meta, k.convs);
    const pushed = nextEvent(tab, "unread:changed");
    await send(sender, conv.id, "after");
    const update: UnreadUpdate = await pushed;
    expect(update.epoch).not.toBe(before.epoch);
    expect(update).toMatchObject({ unreadCount: 2, totalUnread: 2 });
    expect(await snapshot(bob.token)).toMatchObject({ totalUnread: 2, epoch: update.epoch });
  });
});
