import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Result, UnreadUpdate } from "../contracts/index.ts";
import { nextEvent, startHarness, type Harness } from "../testing/harness.ts";
import { testApi } from "../testing/api.ts";

const STATE_LIMIT = 6;

let h: Harness;
beforeAll(async () => {
  h = await startHarness(2, { limits: { state: { points: STATE_LIMIT, durationS: 600 } } });
});
afterAll(() => h.close());

const { user, create, send, list } = testApi(() => h);

/** What a badge shows of one conversation, and both totals, from a fresh snapshot. */
async function badge(token: string, conversationId: number) {
  const s = await list(token);
  const c = s.conversations.find((x) => x.id === conversationId)!;
  return {
    unreadCount: c.unreadCount,
    mentionCount: c.mentionCount,
    muted: c.muted,
    markedUnread: c.markedUnread,
    totalUnread: s.totalUnread,
    totalMentions: s.totalMentions,
  };
}

function ok<T extends object>(res: Result<T>): T {
  if (!res.ok) throw new Error(`expected ok, got ${res.error.code}`);
  return res;
}

/**
 * Ann sends two messages to a group with bob and one to their direct conversation; bob has a tab on each
 * instance and a total of 3.
 */
async function bobWithTwoTabs() {
  const [ann, bob, cat] = [await user("ann"), await user("bob"), await user("cat")];
  const group = await create(ann.token, [bob.user.name, cat.user.name], "Noisy");
  const direct = await create(ann.token, [bob.user.name]);
  const annSocket = await h.connect(ann.token, 0);
  for (let i = 0; i < 2; i++) await send(annSocket, group.id);
  await send(annSocket, direct.id);
  const tabA = await h.connect(bob.token, 0);
  const tabB = await h.connect(bob.token, 1);
  return { ann, bob, cat, group, direct, annSocket, tabA, tabB };
}

const about = (conversationId: number) => (u: UnreadUpdate) => u.conversationId === conversationId;

describe("conversation:mute", () => {
  it("a mute in one tab reaches the other tab on the other instance; mentions still reach the badge; unmute restores", async () => {
    const { bob, group, annSocket, tabA, tabB } = await bobWithTwoTabs();
    const before = await list(bob.token);
    expect(before.totalUnread).toBe(3);

    let pushed = nextEvent(tabB, "unread:changed", about(group.id));
    const muted = ok(await tabA.emitWithAck("conversation:mute", { conversationId: group.id, muted: true })).unread;
    expect(muted).toMatchObject({ unreadCount: 2, mentionCount: 0, muted: true, totalUnread: 1, totalMentions: 0 });
    expect(muted.version).toBe(before.version + 1);
    expect(await pushed).toEqual(muted);
    expect(await badge(bob.token, group.id)).toEqual({
      unreadCount: 2,
      mentionCount: 0,
      muted: true,
      markedUnread: false,
      totalUnread: 1,
      totalMentions: 0,
    });

    pushed = nextEvent(tabB, "unread:changed", (u) => u.conversationId === group.id && u.unreadCount === 3);
    await send(annSocket, group.id, "no mention in a muted group");
    expect(await pushed).toMatchObject({ unreadCount: 3, muted: true, totalUnread: 1 });

    pushed = nextEvent(tabB, "unread:changed", (u) => u.conversationId === group.id && u.mentionCount === 1);
    await send(annSocket, group.id, `@${bob.user.name} this one is for you`);
    expect(await pushed).toMatchObject({
      unreadCount: 4,
      mentionCount: 1,
      muted: true,
      totalUnread: 2,
      totalMentions: 1,
    });

    pushed = nextEvent(tabA, "unread:changed", (u) => u.conversationId === group.id && !u.muted);
    const unmuted = ok(await tabB.emitWithAck("conversation:mute", { conversationId: group.id, muted: false })).unread;
    expect(unmuted).toMatchObject({ unreadCount: 4, mentionCount: 1, muted: false, totalUnread: 5, totalMentions: 1 });
    expect(await pushed).toEqual(unmuted);
    expect(await badge(bob.token, group.id)).toMatchObject({ muted: false, totalUnread: 5, totalMentions: 1 });
    expect(
      await h.db.membership.findUniqueOrThrow({
        where: { userId_conversationId: { userId: bob.user.id, conversationId: group.id } },
        select: { muted: true, muteVersion: true },
      }),
    ).toEqual({ muted: false, muteVersion: 2 });
    await expect.poll(() => h.db.outboxEvent.count({ where: { userId: bob.user.id } })).toBe(0);
  });

  it("a duplicated or replayed mute changes nothing: one version, one push", async () => {
    const { bob, group, tabA } = await bobWithTwoTabs();
    const firstAck = ok(await tabA.emitWithAck("conversation:mute", { conversationId: group.id, muted: true }));
    const againAck = ok(await tabA.emitWithAck("conversation:mute", { conversationId: group.id, muted: true }));
    const [first, again] = [firstAck.unread, againAck.unread];
    expect(again).toEqual(first);
    // The second answer is the current state, not a step: a client only compares it (docs/protocol.md).
    expect([firstAck.changed, againAck.changed]).toEqual([true, false]);
    const where = { userId_conversationId: { userId: bob.user.id, conversationId: group.id } };
    expect(await h.db.membership.findUniqueOrThrow({ where, select: { muteVersion: true } })).toEqual({
      muteVersion: 1,
    });

    // The relay replaying the same change (an entry whose apply already ran, as after a crash before completion).
    await h.db.outboxEvent.create({ data: { kind: "state", conversationId: group.id, userId: bob.user.id, seq: 1 } });
    await h.instances[0]!.app.relay.runOnce();
    await expect.poll(() => h.db.outboxEvent.count({ where: { userId: bob.user.id } })).toBe(0);
    const after = await list(bob.token);
    expect([after.version, after.epoch, after.totalUnread]).toEqual([first.version, first.epoch, 1]);
  });

  it("the relay applies a committed mute whose apply never ran, and skips one whose membership is gone", async () => {
    const { bob, group, direct, tabB } = await bobWithTwoTabs();
    // The state a process that died after the commit leaves: the membership changed, the entry written, Redis
    // never told.
    await h.db.$transaction([
      h.db.membership.update({
        where: { userId_conversationId: { userId: bob.user.id, conversationId: direct.id } },
        data: { muted: true, muteVersion: { increment: 1 } },
      }),
      h.db.outboxEvent.create({ data: { kind: "state", conversationId: direct.id, userId: bob.user.id, seq: 1 } }),
    ]);
    const pushed = nextEvent(tabB, "unread:changed", about(direct.id));
    await h.instances[1]!.app.relay.runOnce();
    expect(await pushed).toMatchObject({ unreadCount: 1, muted: true, totalUnread: 2 });

    expect((await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: bob.token })).status).toBe(
      200,
    );
    const version = (await list(bob.token)).version;
    await h.db.outboxEvent.create({ data: { kind: "state", conversationId: group.id, userId: bob.user.id, seq: 1 } });
    await h.instances[0]!.app.relay.runOnce();
    await expect.poll(() => h.db.outboxEvent.count({ where: { userId: bob.user.id } })).toBe(0);
    const after = await list(bob.token);
    expect([after.version, after.totalUnread, after.conversations.map((c) => c.id)]).toEqual([version, 0, [direct.id]]);
  });
});

describe("conversation:markUnread", () => {
  it("marks a read conversation unread in both tabs; a read naming that mark at the last seq clears it in both", async () => {
    const { bob, group, tabA, tabB } = await bobWithTwoTabs();
    ok(await tabA.emitWithAck("conversation:read", { conversationId: group.id, seq: 2 }));
    expect((await list(bob.token)).totalUnread).toBe(1);

    // The read's own push to tab B may still be on its way: wait for the mark's.
    let pushed = nextEvent(tabB, "unread:changed", (u) => u.conversationId === group.id && u.markedUnread);
    const marked = ok(await tabA.emitWithAck("conversation:markUnread", { conversationId: group.id })).unread;
    expect(marked).toMatchObject({ unreadCount: 1, markedUnread: true, markVersion: 1, totalUnread: 2 });
    expect(await pushed).toEqual(marked);
    expect(await badge(bob.token, group.id)).toMatchObject({ unreadCount: 1, markedUnread: true, totalUnread: 2 });

    // A read without the mark's version (a tab that had the conversation open) does not clear it.
    const stale = ok(await tabB.emitWithAck("conversation:read", { conversationId: group.id, seq: 2 }));
    expect(stale).toMatchObject({ changed: false, unread: { unreadCount: 1, markedUnread: true } });

    pushed = nextEvent(tabA, "unread:changed", about(group.id));
    const read = ok(
      await tabB.emitWithAck("conversation:read", {
        conversationId: group.id,
        seq: 2,
        markVersion: marked.markVersion,
      }),
    );
    expect(read).toMatchObject({
      changed: true,
      unread: { unreadCount: 0, markedUnread: false, markVersion: 0, totalUnread: 1 },
    });
    expect(await pushed).toEqual(read.unread);
    expect(await badge(bob.token, group.id)).toMatchObject({ unreadCount: 0, markedUnread: false, totalUnread: 1 });
    expect(
      await h.db.membership.findUniqueOrThrow({
        where: { userId_conversationId: { userId: bob.user.id, conversationId: group.id } },
        select: { markVersion: true, markAt: true, markClearedVersion: true },
      }),
    ).toEqual({ markVersion: 1, markAt: 2, markClearedVersion: 1 });
  });

  it("a read naming an older mark does not clear a newer one; a read that is not at the last seq clears nothing", async () => {
    const { bob, group, annSocket, tabA, tabB } = await bobWithTwoTabs();
    const first = ok(await tabA.emitWithAck("conversation:markUnread", { conversationId: group.id })).unread;
    expect(first).toMatchObject({ unreadCount: 2, markedUnread: true, markVersion: 1 });
    // Marking again while marked changes nothing: the version every tab names stays the same.
    expect(ok(await tabB.emitWithAck("conversation:markUnread", { conversationId: group.id })).unread).toEqual(first);

    const notLast = ok(
      await tabA.emitWithAck("conversation:read", { conversationId: group.id, seq: 1, markVersion: 1 }),
    );
    expect(notLast.unread).toMatchObject({ unreadCount: 1, markedUnread: true });
    const cleared = ok(
      await tabA.emitWithAck("conversation:read", { conversationId: group.id, seq: 2, markVersion: 1 }),
    );
    expect(cleared.unread).toMatchObject({ unreadCount: 0, markedUnread: false });

    const second = ok(await tabB.emitWithAck("conversation:markUnread", { conversationId: group.id })).unread;
    expect(second).toMatchObject({ unreadCount: 1, markedUnread: true, markVersion: 2 });
    const late = ok(await tabA.emitWithAck("conversation:read", { conversationId: group.id, seq: 2, markVersion: 1 }));
    expect(late).toMatchObject({ changed: false, unread: { unreadCount: 1, markedUnread: true, markVersion: 2 } });
    expect(await badge(bob.token, group.id)).toMatchObject({ unreadCount: 1, markedUnread: true });

    // A new message read past the mark clears it too.
    await send(annSocket, group.id);
    const past = ok(await tabA.emitWithAck("conversation:read", { conversationId: group.id, seq: 3 }));
    expect(past.unread).toMatchObject({ unreadCount: 0, markedUnread: false });
    expect(await badge(bob.token, group.id)).toMatchObject({ unreadCount: 0, markedUnread: false, totalUnread: 1 });
  });

  it("a new mark that Redis cannot show as a change (its clear not applied yet) makes the other tabs resync", async () => {
    const { bob, group, tabA, tabB } = await bobWithTwoTabs();
    ok(await tabA.emitWithAck("conversation:read", { conversationId: group.id, seq: 2 }));
    ok(await tabA.emitWithAck("conversation:markUnread", { conversationId: group.id }));
    // A read that cleared mark 1 committed; its apply has not run yet (no entry: only the order matters here).
    await h.db.membership.update({
      where: { userId_conversationId: { userId: bob.user.id, conversationId: group.id } },
      data: { markClearedVersion: 1 },
    });
    const stale = nextEvent(tabB, "unread:stale");
    const second = ok(await tabA.emitWithAck("conversation:markUnread", { conversationId: group.id })).unread;
    expect(second).toMatchObject({ unreadCount: 1, markedUnread: true, markVersion: 2 });
    await stale;
    const synced = ok(await tabB.emitWithAck("sync"));
    expect(synced.snapshot.conversations.find((c) => c.id === group.id)).toMatchObject({
      markedUnread: true,
      markVersion: 2,
    });
  });

  it("the relay's replay of a read applies the clear it committed", async () => {
    const { bob, group, tabA, tabB } = await bobWithTwoTabs();
    ok(await tabA.emitWithAck("conversation:read", { conversationId: group.id, seq: 2 }));
    // Tab B hears the mark before the relay runs, so the push awaited below can only be the relay's.
    const marked = nextEvent(tabB, "unread:changed", (u) => u.conversationId === group.id && u.markedUnread);
    ok(await tabA.emitWithAck("conversation:markUnread", { conversationId: group.id }));
    await marked;
    // A read that cleared the mark and committed, then its process died before Redis heard of it.
    await h.db.$transaction([
      h.db.membership.update({
        where: { userId_conversationId: { userId: bob.user.id, conversationId: group.id } },
        data: { markClearedVersion: 1 },
      }),
      h.db.outboxEvent.create({ data: { kind: "read", conversationId: group.id, userId: bob.user.id, seq: 2 } }),
    ]);
    const pushed = nextEvent(tabB, "unread:changed", about(group.id));
    await h.instances[0]!.app.relay.runOnce();
    expect(await pushed).toMatchObject({ unreadCount: 0, markedUnread: false, totalUnread: 1 });
  });

  it("a conversation with no message yet is not marked: a badge of 1 would have nothing to read behind it", async () => {
    const [ann, bob, cat] = [await user("ann"), await user("bob"), await user("cat")];
    const quiet = await create(ann.token, [bob.user.name, cat.user.name], "Quiet");
    const tab = await h.connect(bob.token, 1);
    const before = await list(bob.token);

    const refused = ok(await tab.emitWithAck("conversation:markUnread", { conversationId: quiet.id }));
    expect(refused).toMatchObject({ changed: false, unread: { unreadCount: 0, markedUnread: false, markVersion: 0 } });
    expect(await list(bob.token)).toMatchObject({ totalUnread: before.totalUnread, version: before.version });
    const registers = () =>
      h.db.membership.findUniqueOrThrow({
        where: { userId_conversationId: { userId: bob.user.id, conversationId: quiet.id } },
        select: { markVersion: true, markAt: true },
      });
    expect(await registers()).toEqual({ markVersion: 0, markAt: 0 });

    // Once there is a message, read, the same command marks it.
    const annSocket = await h.connect(ann.token, 0);
    await send(annSocket, quiet.id);
    ok(await tab.emitWithAck("conversation:read", { conversationId: quiet.id, seq: 1 }));
    const marked = ok(await tab.emitWithAck("conversation:markUnread", { conversationId: quiet.id }));
    expect(marked).toMatchObject({ changed: true, unread: { unreadCount: 1, markedUnread: true, markVersion: 1 } });
    expect(await registers()).toEqual({ markVersion: 1, markAt: 1 });
  });
});

describe("refusals change nothing", () => {
  it("invalid payloads, non-members and the per-user limit are refused with their codes", async () => {
    const { bob, cat, direct, group, tabA } = await bobWithTwoTabs();
    const before = await list(bob.token);
    const invalid = [
      await tabA.emitWithAck("conversation:mute", { conversationId: group.id, muted: "yes" } as never),
      await tabA.emitWithAck("conversation:mute", { conversationId: group.id } as never),
      await tabA.emitWithAck("conversation:mute", { conversationId: group.id, muted: true, extra: 1 } as never),
      await tabA.emitWithAck("conversation:markUnread", { conversationId: -1 }),
      await tabA.emitWithAck("conversation:markUnread", "nope" as never),
      await tabA.emitWithAck("conversation:read", { conversationId: group.id, seq: 2, markVersion: -1 }),
    ];
    for (const res of invalid) expect(res).toMatchObject({ ok: false, error: { code: "invalid" } });

    const catTab = await h.connect(cat.token, 1);
    const forbidden = [
      await catTab.emitWithAck("conversation:mute", { conversationId: direct.id, muted: true }),
      await catTab.emitWithAck("conversation:markUnread", { conversationId: direct.id }),
      await catTab.emitWithAck("conversation:markUnread", { conversationId: 2_000_000_000 }),
    ];
    for (const res of forbidden) expect(res).toMatchObject({ ok: false, error: { code: "forbidden" } });
    expect(await list(bob.token)).toEqual(before);

    // The limit counts per user across tabs and instances; cat's three refused calls above used three points.
    const catTabB = await h.connect(cat.token, 0);
    const answers = [];
    for (let i = 0; i < STATE_LIMIT - 1; i++)
      answers.push(
        await (i % 2 ? catTab : catTabB).emitWithAck("conversation:mute", { conversationId: group.id, muted: true }),
      );
    expect(answers.slice(0, STATE_LIMIT - 3).every((a) => a.ok)).toBe(true);
    expect(answers.slice(STATE_LIMIT - 3)).toEqual([
      { ok: false, error: expect.objectContaining({ code: "rate_limited", retryAfterMs: expect.any(Number) }) },
      { ok: false, error: expect.objectContaining({ code: "rate_limited", retryAfterMs: expect.any(Number) }) },
    ]);
    const catBefore = await list(cat.token);
    const refused = await catTab.emitWithAck("conversation:mute", { conversationId: group.id, muted: false });
    expect(refused).toMatchObject({ ok: false, error: { code: "rate_limited" } });
    expect(await list(cat.token)).toEqual(catBefore);
    expect(catBefore.conversations.find((c) => c.id === group.id)?.muted).toBe(true);
    // The accepted mutes' entries are completed in the background (outbox.completeSoon); the refusals wrote none.
    await expect.poll(() => h.db.outboxEvent.count({ where: { userId: { in: [bob.user.id, cat.user.id] } } })).toBe(0);
  });
});
