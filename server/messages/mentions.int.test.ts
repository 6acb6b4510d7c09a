import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UnreadUpdate } from "../contracts/index.ts";
import { logger } from "../log.ts";
import { createOutbox } from "../outbox/outbox.ts";
import { flushRedis, nextEvent, startHarness, type Harness } from "../testing/harness.ts";
import { testApi } from "../testing/api.ts";
import { createUnreadService } from "../unread/unread.service.ts";
import { createMessageFanout } from "./fanout.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness(2);
});
afterAll(() => h.close());

const { user, create, send, list } = testApi(() => h);

/** The user's snapshot reduced to what mentions change: both totals and each conversation's counts. */
async function counts(token: string) {
  const s = await list(token);
  return {
    totalUnread: s.totalUnread,
    totalMentions: s.totalMentions,
    conversations: Object.fromEntries(s.conversations.map((c) => [c.id, [c.unreadCount, c.mentionCount]])),
  };
}

/** A group of three: ann (who sends, on instance 0), bob (a tab on instance 1) and cat. */
async function groupOfThree() {
  const [ann, bob, cat] = [await user("ann"), await user("bob"), await user("cat")];
  const group = await create(ann.token, [bob.user.name, cat.user.name], "Three");
  return { ann, bob, cat, group, annSocket: await h.connect(ann.token, 0), bobTab: await h.connect(bob.token, 1) };
}

describe("mentions on send", () => {
  it("`@bob hi` counts one mention for bob only, in his push and his snapshot", async () => {
    const { ann, bob, cat, group, annSocket, bobTab } = await groupOfThree();
    const pushed = nextEvent(bobTab, "unread:changed", (u) => u.conversationId === group.id);
    const res = await send(annSocket, group.id, `@${bob.user.name.toUpperCase()} hi`);
    expect(res.ok).toBe(true);
    expect(await pushed).toMatchObject({ unreadCount: 1, mentionCount: 1, totalUnread: 1, totalMentions: 1 });

    expect(await counts(bob.token)).toEqual({
      totalUnread: 1,
      totalMentions: 1,
      conversations: { [group.id]: [1, 1] },
    });
    expect(await counts(cat.token)).toEqual({
      totalUnread: 1,
      totalMentions: 0,
      conversations: { [group.id]: [1, 0] },
    });
    expect(await counts(ann.token)).toEqual({
      totalUnread: 0,
      totalMentions: 0,
      conversations: { [group.id]: [0, 0] },
    });
    expect(await h.db.mention.findMany({ where: { conversationId: group.id } })).toEqual([
      { userId: bob.user.id, conversationId: group.id, seq: 1 },
    ]);
  });

  it("`@all` mentions every other member of a group once; a retried send writes no mention twice", async () => {
    const { ann, bob, cat, group, annSocket } = await groupOfThree();
    const clientMsgId = randomUUID();
    const first = await send(annSocket, group.id, "@all standup @here", clientMsgId);
    const retry = await send(annSocket, group.id, "@all standup @here", clientMsgId);
    expect(first.ok && retry.ok && retry.message.id === first.message.id).toBe(true);
    await send(annSocket, group.id, `@${ann.user.name} a note to self`);

    for (const who of [bob, cat])
      expect(await counts(who.token)).toEqual({
        totalUnread: 2,
        totalMentions: 1,
        conversations: { [group.id]: [2, 1] },
      });
    expect(await counts(ann.token)).toEqual({
      totalUnread: 0,
      totalMentions: 0,
      conversations: { [group.id]: [0, 0] },
    });
    const rows = await h.db.mention.findMany({ where: { conversationId: group.id }, orderBy: { userId: "asc" } });
    expect(rows).toEqual([
      { userId: bob.user.id, conversationId: group.id, seq: 1 },
      { userId: cat.user.id, conversationId: group.id, seq: 1 },
    ]);
  });

  it("`@all` in a direct conversation and names of non-members mention nobody", async () => {
    const [ann, bob, cat] = [await user("ann"), await user("bob"), await user("cat")];
    const direct = await create(ann.token, [bob.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    await send(annSocket, direct.id, `@all @${cat.user.name} bob@example.com`);
    expect(await counts(bob.token)).toEqual({
      totalUnread: 1,
      totalMentions: 0,
      conversations: { [direct.id]: [1, 0] },
    });
    expect(await h.db.mention.count({ where: { conversationId: direct.id } })).toBe(0);
  });

  it("a snapshot after Redis lost everything (rebuilt from the database) agrees with the live counts", async () => {
    const { ann, bob, cat, group, annSocket } = await groupOfThree();
    const other = await create(ann.token, [bob.user.name]);
    await send(annSocket, group.id, `@${bob.user.name} one`);
    await send(annSocket, group.id, "@all two");
    await send(annSocket, group.id, "three");
    await send(annSocket, other.id, `hey @${bob.user.name}`);
    const live = await Promise.all([bob, cat, ann].map((who) => counts(who.token)));
    expect(live[0]).toEqual({
      totalUnread: 4,
      totalMentions: 3,
      conversations: { [group.id]: [3, 2], [other.id]: [1, 1] },
    });

    await flushRedis(h.redis);
    expect(await Promise.all([bob, cat, ann].map((who) => counts(who.token)))).toEqual(live);
  });

  it("the relay's replay of a message carries its stored mentions", async () => {
    const { bob, cat, group, annSocket } = await groupOfThree();
    // A key space of its own whose state predates the message, as Redis would be if the process died after the
    // commit: the replay is then the only way the message reaches it.
    const prefix = `replay-${randomUUID()}:`;
    const unread = createUnreadService({ redis: h.redis, db: h.db, prefix });
    for (const who of [bob, cat]) await unread.rebuild(who.user.id);
    const sent = await send(annSocket, group.id, `@${bob.user.name} look`);
    expect(sent.ok).toBe(true);
    const fanout = createMessageFanout({
      db: h.db,
      unread,
      notifier: h.instances[0]!.app.notifier,
      outbox: createOutbox(h.db),
      log: logger.child({}, { level: "silent" }),
    });
    const sender = sent.ok ? sent.message.senderId : 0;
    await fanout.replay({ kind: "message", conversationId: group.id, userId: sender, seq: 1 });

    const bobCounts = await unread.snapshot(bob.user.id);
    const catCounts = await unread.snapshot(cat.user.id);
    expect([bobCounts.totalUnread, bobCounts.totalMentions, bobCounts.counts.get(group.id)]).toEqual([
      1,
      1,
      expect.objectContaining<Partial<UnreadUpdate>>({ unreadCount: 1, mentionCount: 1 }),
    ]);
    expect([catCounts.totalUnread, catCounts.totalMentions, catCounts.counts.get(group.id)?.mentionCount]).toEqual([
      1, 0, 0,
    ]);
  });
});
