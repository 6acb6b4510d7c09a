import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UnreadUpdate } from "../contracts/index.ts";
import { poolOf } from "../db/prisma.ts";
import { userKeys } from "../redis/keys.ts";
import { nextEvent, startHarness, type Harness } from "../testing/harness.ts";
import { testApi } from "../testing/api.ts";
import { reconcile } from "../unread/reconcile.ts";
import { createUnreadService } from "../unread/unread.service.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness(2);
});
afterAll(() => h.close());

const { user, create, send, list } = testApi(() => h);

const addMembers = (token: string, conversationId: number, body: unknown) =>
  h.http(`/api/conversations/${conversationId}/members`, { method: "POST", token, body: JSON.stringify(body) });

/** Sessions of the test's database waiting for a lock. */
const waiting = async () =>
  Number(
    (
      await poolOf(h.db).query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
      )
    ).rows[0]!.n,
  );

/** Starts `first`, then `second`, each queued behind a lock held on the group's row, then lets them go in that order. */
async function queued<A, B>(id: number, first: () => Promise<A>, second: () => Promise<B>): Promise<[A, B]> {
  const holder = await poolOf(h.db).connect();
  try {
    await holder.query("BEGIN");
    await holder.query(`SELECT 1 FROM "Conversation" WHERE "id" = $1 FOR UPDATE`, [id]);
    const a = first();
    await expect.poll(waiting, { message: "the first waits for the row" }).toBe(1);
    const b = second();
    await expect.poll(waiting, { message: "both wait for the row" }).toBe(2);
    await holder.query("COMMIT");
    return [await a, await b];
  } finally {
    holder.release();
  }
}

const membersOf = async (conversationId: number) =>
  (await h.db.membership.findMany({ where: { conversationId }, select: { userId: true } })).map((m) => m.userId).sort();

describe("adding people to a group", () => {
  it("joins their list with nothing unread, tells the members before, and counts only what comes after", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name], "Planning");
    const annSocket = await h.connect(ann.token, 0);
    for (let i = 0; i < 3; i++) await send(annSocket, group.id, `before ${i}`);
    // cat has counters in Redis already (a direct conversation with one unread), as anyone who uses Tally does.
    const direct = await create(ben.token, [cat.user.name]);
    await send(await h.connect(ben.token, 0), direct.id, "hello cat");
    expect((await list(cat.token)).totalUnread).toBe(1);

    const catTab = await h.connect(cat.token, 1);
    const benTab = await h.connect(ben.token, 1);
    const created = nextEvent(catTab, "conversation:created");
    const updated = nextEvent(benTab, "conversation:updated");
    // The adder's own name, and a name twice in other letter cases, are left out.
    const res = await addMembers(ann.token, group.id, {
      memberNames: [cat.user.name.toUpperCase(), cat.user.name, ann.user.name],
    });
    expect(res.status).toBe(200);
    expect(res.body.conversation.members.map((m: { name: string }) => m.name).sort()).toEqual(
      [ann.user.name, ben.user.name, cat.user.name].sort(),
    );
    expect((await created).conversation).toMatchObject({ id: group.id, title: "Planning", unreadCount: 0, lastSeq: 3 });
    const told = await updated;
    expect(told.conversation.members.map((m) => m.name)).toContain(cat.user.name);
    expect(told.change).toEqual({ by: { id: ann.user.id, name: ann.user.name }, added: [cat.user.id], seq: 3 });
    expect(await list(cat.token)).toMatchObject({ totalUnread: 1 });

    // cat may read what was said before; none of it counts.
    const history = await h.http(`/api/conversations/${group.id}/messages`, { token: cat.token });
    expect(history.body.messages.map((m: { content: string }) => m.content)).toEqual([
      "before 0",
      "before 1",
      "before 2",
    ]);
    expect(history.body.added).toEqual([
      {
        userId: cat.user.id,
        name: cat.user.name,
        by: { id: ann.user.id, name: ann.user.name },
        seq: 3,
        at: expect.any(String),
      },
    ]);

    const pushed = nextEvent(catTab, "unread:changed", (u) => u.conversationId === group.id);
    const sent = await send(annSocket, group.id, "welcome, cat");
    expect(sent.ok).toBe(true);
    expect(await pushed).toMatchObject({ conversationId: group.id, unreadCount: 1, totalUnread: 2 });
    expect(await list(cat.token)).toMatchObject({ totalUnread: 2 });
    expect((await list(ben.token)).conversations.find((c) => c.id === group.id)).toMatchObject({ unreadCount: 4 });

    // And cat may write there; a message that mentions someone is stored apart (with its Mention rows), and
    // counts for the one added alike.
    const catSent = await send(catTab, group.id, "thanks");
    expect(catSent.ok).toBe(true);
    const mentioned = nextEvent(catTab, "unread:changed", (u) => u.conversationId === group.id);
    const mention = await send(annSocket, group.id, `@${cat.user.name} are you in?`);
    expect(mention.ok, JSON.stringify(mention)).toBe(true);
    // "welcome, cat" is still unread (her own message above it read nothing), and this one.
    expect(await mentioned).toMatchObject({ conversationId: group.id, unreadCount: 2, mentionCount: 1 });
  });

  it("a message stored before the add and replayed by the relay after it does not count for the one added", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name], "Replayed");
    const annSocket = await h.connect(ann.token, 0);
    for (let i = 0; i < 2; i++) await send(annSocket, group.id);
    await list(cat.token); // cat's counters exist
    expect((await addMembers(ann.token, group.id, { memberNames: [cat.user.name] })).status).toBe(200);

    // The instance that stored message 2 died before Redis had it: the relay replays it with the members as they
    // are now, cat among them.
    await h.db.outboxEvent.create({ data: { kind: "message", conversationId: group.id, userId: ann.user.id, seq: 2 } });
    expect(await h.instances[1]!.app.relay.runOnce(0)).toMatchObject({ replayed: 1, failed: 0 });
    expect(await list(cat.token)).toMatchObject({ totalUnread: 0 });
    expect((await list(ben.token)).totalUnread).toBe(2);
  });

  it("sends racing the add: the one added counts exactly the messages stored after they joined, never more", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name], "Race");
    const annSocket = await h.connect(ann.token, 0);
    const benSocket = await h.connect(ben.token, 1);
    for (let i = 0; i < 5; i++) await send(annSocket, group.id);
    await list(cat.token);
    const catTab = await h.connect(cat.token, 1);
    const counts: number[] = [];
    catTab.on("unread:changed", (u: UnreadUpdate) => {
      if (u.conversationId === group.id) counts.push(u.unreadCount);
    });

    const sends = Array.from({ length: 24 }, (_, i) => send(i % 2 ? annSocket : benSocket, group.id, `race ${i}`));
    const adding = addMembers(ben.token, group.id, { memberNames: [cat.user.name] });
    const results = await Promise.all(sends);
    expect(results.every((r) => r.ok)).toBe(true);
    expect((await adding).status).toBe(200);

    const membership = await h.db.membership.findUniqueOrThrow({
      where: { userId_conversationId: { userId: cat.user.id, conversationId: group.id } },
    });
    expect(membership.lastReadSeq).toBe(membership.joinedSeq);
    const after = await h.db.message.count({ where: { conversationId: group.id, seq: { gt: membership.joinedSeq } } });
    await expect.poll(() => h.db.outboxEvent.count(), { timeout: 30_000 }).toBe(0);
    await expect.poll(async () => (await list(cat.token)).totalUnread).toBe(after);
    // No push ever counted a message from before cat joined.
    expect(Math.max(0, ...counts)).toBeLessThanOrEqual(after);
    expect(await reconcile({ db: h.db, unread: createUnreadService({ redis: h.redis, db: h.db }) })).toMatchObject({
      drifted: 0,
    });
  });

  it("refuses with a typed error and changes nothing: non-members, direct conversations, unknown names, blocks, leavers, full groups", async () => {
    const [ann, ben, cat, dan, eve] = await Promise.all(["ann", "ben", "cat", "dan", "eve"].map((n) => user(n)));
    const group = await create(ann!.token, [ben!.user.name, dan!.user.name], "Closed");
    const direct = await create(ann!.token, [ben!.user.name]);
    const before = await membersOf(group.id);
    const refused = async (token: string, conversationId: number, body: unknown, code: string, message?: RegExp) => {
      const res = await addMembers(token, conversationId, body);
      expect(res.body.error?.code, JSON.stringify(res.body)).toBe(code);
      if (message) expect(res.body.error.message).toMatch(message);
    };

    await refused(cat!.token, group.id, { memberNames: [eve!.user.name] }, "forbidden");
    await refused(ann!.token, 999_999_999, { memberNames: [eve!.user.name] }, "forbidden");
    await refused(ann!.token, direct.id, { memberNames: [eve!.user.name] }, "invalid", /group only/);
    await refused(ann!.token, group.id, { memberNames: ["nobody_here_at_all"] }, "not_found");
    await refused(ann!.token, group.id, { memberNames: [] }, "invalid");
    await refused(ann!.token, group.id, { memberNames: [ann!.user.name] }, "invalid", /other than yourself/);
    await refused(ann!.token, group.id, { memberNames: [ben!.user.name] }, "invalid", /in this group already/);
    await refused(ann!.token, group.id, { memberNames: [eve!.user.name], extra: 1 }, "invalid");
    await refused(ann!.token, group.id, { memberNames: ["bad name!"] }, "invalid");

    // eve blocked ann: to ann, eve is a name nobody has. ann blocked cat: named as such.
    expect(
      (
        await h.http("/api/blocks", {
          method: "POST",
          token: eve!.token,
          body: JSON.stringify({ name: ann!.user.name }),
        })
      ).status,
    ).toBe(200);
    await refused(ann!.token, group.id, { memberNames: [eve!.user.name] }, "not_found");
    expect(
      (
        await h.http("/api/blocks", {
          method: "POST",
          token: ann!.token,
          body: JSON.stringify({ name: cat!.user.name }),
        })
      ).status,
    ).toBe(200);
    await refused(ann!.token, group.id, { memberNames: [cat!.user.name] }, "forbidden", /You blocked/);

    // dan leaves; he cannot be added back (by anyone).
    expect((await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: dan!.token })).status).toBe(
      200,
    );
    await refused(ben!.token, group.id, { memberNames: [dan!.user.name] }, "invalid", /left this group/);
    expect(await membersOf(group.id)).toEqual(before.filter((id) => id !== dan!.user.id));

    // A group of 51 is full.
    const many = await Promise.all(Array.from({ length: 49 }, (_, i) => user(`m${i}`)));
    const big = await create(ann!.token, [ben!.user.name, ...many.slice(0, 48).map((m) => m.user.name)], "Big");
    expect((await membersOf(big.id)).length).toBe(50);
    await refused(ann!.token, big.id, { memberNames: [many[48]!.user.name, dan!.user.name] }, "invalid", /at most 51/);
    expect((await membersOf(big.id)).length).toBe(50);
    expect((await addMembers(ann!.token, big.id, { memberNames: [many[48]!.user.name] })).status).toBe(200);
    expect((await membersOf(big.id)).length).toBe(51);
  });

  it("a group deleted while someone is being added: whichever goes first, the newcomer is told and counts nothing", async () => {
    for (const first of ["add", "delete"] as const) {
      const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
      const group = await create(ann.token, [ben.user.name], "Doomed");
      const annSocket = await h.connect(ann.token, 0);
      await send(annSocket, group.id);
      await list(cat.token);
      const catTab = await h.connect(cat.token, 1);
      const removed = first === "add" ? nextEvent(catTab, "conversation:removed", () => true, 30_000) : null;
      const add = () => addMembers(ann.token, group.id, { memberNames: [cat.user.name] });
      const del = () => h.http(`/api/conversations/${group.id}`, { method: "DELETE", token: ann.token });
      const [added, deleted] =
        first === "add"
          ? await queued(group.id, add, del)
          : await queued(group.id, del, add).then(([d, a]) => [a, d] as const);
      expect(deleted.status, first).toBe(200);
      await expect.poll(() => h.db.outboxEvent.count(), { timeout: 30_000 }).toBe(0);
      expect(await h.db.conversation.count({ where: { id: group.id } })).toBe(0);
      expect(await list(cat.token), first).toMatchObject({ totalUnread: 0, conversations: [] });
      if (first === "add") {
        // Added, then deleted with the others: told, and given a departure like every member.
        await removed;
        expect(await h.db.departure.count({ where: { userId: cat.user.id, conversationId: group.id } })).toBe(1);
      } else expect(added.status).toBe(403); // the group was gone
    }
  });

  it("names already in the group are skipped before the checks: a member who blocked the adder refuses nothing", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name], "Blocked within");
    const block = { method: "POST", token: ben.token, body: JSON.stringify({ name: ann.user.name }) };
    expect((await h.http("/api/blocks", block)).status).toBe(200);
    const res = await addMembers(ann.token, group.id, { memberNames: [cat.user.name, ben.user.name] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await membersOf(group.id)).toEqual([ann.user.id, ben.user.id, cat.user.id].sort());
    const onlyBen = await addMembers(ann.token, group.id, { memberNames: [ben.user.name] });
    expect(onlyBen.body.error).toMatchObject({
      code: "invalid",
      message: "Everyone you named is in this group already.",
    });
  });

  it("a direct conversation hidden from the caller is answered as one that does not exist", async () => {
    const [mal, ann, cat] = [await user("mal"), await user("ann"), await user("cat")];
    const hidden = await create(mal.token, [ann.user.name]); // nobody wrote yet: not ann's
    const res = await addMembers(ann.token, hidden.id, { memberNames: [cat.user.name] });
    expect(res.body.error?.code).toBe("forbidden");
    const nowhere = await addMembers(ann.token, 999_999_998, { memberNames: [cat.user.name] });
    expect(res.body.error.message).toBe(nowhere.body.error.message);
    const leave = await h.http(`/api/conversations/${hidden.id}/leave`, { method: "POST", token: ann.token });
    expect(leave.body.error?.code).toBe("forbidden");
  });

  it("keeps 'added' in the group's history after that member leaves", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name], "Passing through");
    expect((await addMembers(ben.token, group.id, { memberNames: [cat.user.name] })).status).toBe(200);
    const leave = await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: cat.token });
    expect(leave.status).toBe(200);
    const history = await h.http(`/api/conversations/${group.id}/messages`, { token: ann.token });
    const by = { id: ben.user.id, name: ben.user.name };
    expect(history.body.added).toEqual([
      { userId: cat.user.id, name: cat.user.name, by, seq: 0, at: expect.any(String) },
    ]);
    expect(history.body.left).toEqual([{ userId: cat.user.id, name: cat.user.name, at: expect.any(String) }]);
  });

  it("someone who left before leaves were kept, a day or more ago, can be added back and counts the group again", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name, cat.user.name], "Old leaver");
    const annSocket = await h.connect(ann.token, 0);
    await send(annSocket, group.id);
    expect((await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: cat.token })).status).toBe(
      200,
    );
    expect(await h.redis.hexists(userKeys(cat.user.id).gone, String(group.id))).toBe(1);
    // A leave from before the GroupLeave table, whose departure reconciliation deleted after a day: the database
    // no longer knows it; Redis still holds the "gone" mark (fewer than 256 marks are never pruned).
    await h.db.groupLeave.deleteMany({ where: { userId: cat.user.id, conversationId: group.id } });
    await h.db.departure.deleteMany({ where: { userId: cat.user.id, conversationId: group.id } });

    expect((await addMembers(ann.token, group.id, { memberNames: [cat.user.name] })).status).toBe(200);
    expect(await h.redis.hexists(userKeys(cat.user.id).gone, String(group.id))).toBe(0);
    await send(annSocket, group.id);
    await send(annSocket, group.id);
    expect((await list(cat.token)).conversations.find((c) => c.id === group.id)).toMatchObject({ unreadCount: 2 });
    expect(await reconcile({ db: h.db, unread: createUnreadService({ redis: h.redis, db: h.db }) })).toMatchObject({
      drifted: 0,
    });
  });
});

describe("removing people from a group", () => {
  const removeMember = (token: string, conversationId: number | string, memberId: number | string) =>
    h.http(`/api/conversations/${conversationId}/members/${memberId}`, { method: "DELETE", token });

  it("takes the group out of their counters and tabs, tells the others, and the history says who removed them", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name, cat.user.name], "Book club");
    const direct = await create(ann.token, [cat.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    for (let i = 0; i < 3; i++) await send(annSocket, group.id, `group ${i}`);
    await send(annSocket, direct.id, "just you");
    await expect.poll(async () => (await list(cat.token)).totalUnread).toBe(4);

    const catTabs = [await h.connect(cat.token, 0), await h.connect(cat.token, 1)];
    const benTab = await h.connect(ben.token, 1);
    const removed = catTabs.map((t) => nextEvent(t, "conversation:removed"));
    const zeroed = nextEvent(catTabs[1]!, "unread:changed", (u) => u.conversationId === group.id);
    const updated = nextEvent(benTab, "conversation:updated");
    const res = await removeMember(ann.token, group.id, cat.user.id);
    expect(res).toMatchObject({ status: 200, body: { ok: true } });

    for (const r of removed) {
      expect(await r).toEqual({ conversationId: group.id, how: { reason: "removed", by: ann.user.id } });
    }
    // The group's 3 leave cat's badge in the same update as its row; the direct conversation's 1 stays.
    expect(await zeroed).toMatchObject({ unreadCount: 0, totalUnread: 1 });
    const told = await updated;
    expect(told.conversation.members.map((m) => m.name).sort()).toEqual([ann.user.name, ben.user.name].sort());
    expect(told.change).toEqual({ by: { id: ann.user.id, name: ann.user.name }, removed: [cat.user.id] });
    const catList = await list(cat.token);
    expect(catList.conversations.map((c) => c.id)).toEqual([direct.id]);
    expect(catList.totalUnread).toBe(1);

    // cat can neither write there nor read it any more.
    expect(await send(catTabs[0]!, group.id, "still here?")).toMatchObject({
      ok: false,
      error: { code: "forbidden" },
    });
    expect((await h.http(`/api/conversations/${group.id}/messages`, { token: cat.token })).status).toBe(403);

    // The others' history says so; ben still counts the group as before.
    const history = await h.http(`/api/conversations/${group.id}/messages`, { token: ben.token });
    expect(history.body.left).toEqual([
      {
        userId: cat.user.id,
        name: cat.user.name,
        removedBy: { id: ann.user.id, name: ann.user.name },
        at: expect.any(String),
      },
    ]);
    expect((await list(ben.token)).totalUnread).toBe(3);
    expect(await h.db.departure.count({ where: { userId: cat.user.id, conversationId: group.id } })).toBe(1);

    // A removal is final, as a leave is: nobody can put cat back.
    const again = await addMembers(ben.token, group.id, { memberNames: [cat.user.name] });
    expect(again.body.error).toMatchObject({ code: "invalid", message: expect.stringMatching(/was removed/) });
    // Named with someone who left, both are said.
    const [dan] = [await user("dan")];
    expect((await addMembers(ann.token, group.id, { memberNames: [dan.user.name] })).status).toBe(200);
    expect((await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: dan.token })).status).toBe(
      200,
    );
    const both = await addMembers(ann.token, group.id, { memberNames: [cat.user.name, dan.user.name] });
    expect(both.body.error.message).toBe(
      `'${dan.user.name}' left this group; '${cat.user.name}' was removed from it: someone who left a group or was ` +
        "removed from it cannot be added to it again.",
    );
    expect(await membersOf(group.id)).toEqual([ann.user.id, ben.user.id].sort((a, b) => a - b));
  });

  it("refuses with a typed error and changes nothing: others than the creator, non-members, direct conversations, oneself", async () => {
    const [ann, ben, cat, dan] = await Promise.all(["ann", "ben", "cat", "dan"].map((n) => user(n)));
    const group = await create(ann!.token, [ben!.user.name, cat!.user.name], "Kept");
    const direct = await create(ann!.token, [ben!.user.name]);
    const before = await membersOf(group.id);
    const refused = async (token: string, conversationId: number | string, memberId: number | string, code: string) => {
      const res = await removeMember(token, conversationId, memberId);
      expect(res.body.error?.code, JSON.stringify(res.body)).toBe(code);
      return res.body.error.message as string;
    };

    expect(await refused(ben!.token, group.id, cat!.user.id, "forbidden")).toMatch(/Only the group's owner/);
    expect(await refused(dan!.token, group.id, cat!.user.id, "forbidden")).toMatch(/not a member/);
    expect(await refused(ann!.token, 999_999_999, cat!.user.id, "forbidden")).toMatch(/not a member/);
    expect(await refused(ann!.token, direct.id, ben!.user.id, "invalid")).toMatch(/direct conversation/);
    expect(await refused(ann!.token, group.id, ann!.user.id, "invalid")).toMatch(/leave the group instead/);
    expect(await refused(ann!.token, group.id, dan!.user.id, "not_found")).toMatch(/not in this group/);
    await refused(ann!.token, group.id, "cat", "invalid");
    await refused(ann!.token, "x", cat!.user.id, "invalid");
    await refused(ann!.token, group.id, -1, "invalid");
    expect(await membersOf(group.id)).toEqual(before);
    expect(await h.db.departure.count({ where: { conversationId: group.id } })).toBe(0);
    expect(await h.db.groupLeave.count({ where: { conversationId: group.id } })).toBe(0);

    // Twice: the second finds nobody to remove.
    expect((await removeMember(ann!.token, group.id, cat!.user.id)).status).toBe(200);
    expect(await refused(ann!.token, group.id, cat!.user.id, "not_found")).toMatch(/not in this group/);
    // The creator who left can no longer remove anyone.
    expect((await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: ann!.token })).status).toBe(
      200,
    );
    expect(await refused(ann!.token, group.id, ben!.user.id, "forbidden")).toMatch(/not a member/);
    expect(await membersOf(group.id)).toEqual([ben!.user.id]);
  });

  it("sends racing the removal: the one removed ends with the group out of their counters, and nothing drifts", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name, cat.user.name], "Race out");
    const other = await create(ben.token, [cat.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    const benSocket = await h.connect(ben.token, 1);
    for (let i = 0; i < 3; i++) await send(annSocket, group.id);
    await send(benSocket, other.id, "stays unread");
    const catTab = await h.connect(cat.token, 1);
    const totals: [number, number][] = [];
    catTab.on("unread:changed", (u: UnreadUpdate) => totals.push([u.version, u.totalUnread]));

    const sends = Array.from({ length: 24 }, (_, i) => send(i % 2 ? annSocket : benSocket, group.id, `race ${i}`));
    const removing = removeMember(ann.token, group.id, cat.user.id);
    const results = await Promise.all(sends);
    expect(results.every((r) => r.ok)).toBe(true);
    expect((await removing).status).toBe(200);

    await expect.poll(() => h.db.outboxEvent.count(), { timeout: 30_000 }).toBe(0);
    // Whatever order the removal and the sends reached Redis in, the group is gone from cat's counters, for good.
    await expect.poll(async () => (await list(cat.token)).totalUnread).toBe(1);
    expect((await list(cat.token)).conversations.map((c) => c.id)).toEqual([other.id]);
    const last = totals.sort((a, b) => a[0] - b[0]).at(-1);
    expect(last?.[1]).toBe(1);
    // Another send after all that does not bring it back.
    await send(annSocket, group.id, "after");
    await expect.poll(() => h.db.outboxEvent.count(), { timeout: 30_000 }).toBe(0);
    expect((await list(cat.token)).totalUnread).toBe(1);
    expect(await reconcile({ db: h.db, unread: createUnreadService({ redis: h.redis, db: h.db }) })).toMatchObject({
      drifted: 0,
    });
  });

  it("queued behind the group's row: the removed member's send is refused, and so is a removal or add by someone whose leave went first", async () => {
    const [ann, ben, cat, dan] = await Promise.all(["ann", "ben", "cat", "dan"].map((n) => user(n)));
    const group = await create(ann!.token, [ben!.user.name, cat!.user.name], "Queued");
    await send(await h.connect(ann!.token, 0), group.id, "before");
    const catSocket = await h.connect(cat!.token, 1);
    const before = await h.db.conversation.findUniqueOrThrow({ where: { id: group.id } });

    // The removal first, cat's send behind it: stored after the removal committed, it would be a non-member's.
    const [removed, sent] = await queued(
      group.id,
      () => removeMember(ann!.token, group.id, cat!.user.id),
      () => send(catSocket, group.id, "sneaking in"),
    );
    expect(removed.status).toBe(200);
    expect(sent).toMatchObject({ ok: false, error: { code: "forbidden" } });
    expect(await h.db.message.count({ where: { conversationId: group.id } })).toBe(1);
    // The seq it took was given back, and the group's place in lists with it.
    expect(await h.db.conversation.findUniqueOrThrow({ where: { id: group.id } })).toMatchObject({
      lastSeq: before.lastSeq,
      lastActivityAt: before.lastActivityAt,
    });
    expect((await send(await h.connect(ben!.token, 0), group.id, "next")).ok).toBe(true);
    expect(await h.db.message.findMany({ where: { conversationId: group.id }, select: { seq: true } })).toEqual([
      { seq: 1 },
      { seq: 2 },
    ]);

    // ann leaves with her removal of ben and her add of dan queued behind the leave: neither may happen.
    const leave = () => h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: ann!.token });
    const [left, refused] = await queued(group.id, leave, () => removeMember(ann!.token, group.id, ben!.user.id));
    expect(left.status).toBe(200);
    expect(refused.body.error).toMatchObject({ code: "forbidden", message: expect.stringMatching(/not a member/) });
    expect(await membersOf(group.id)).toEqual([ben!.user.id]);
    const other = await create(ben!.token, [cat!.user.name, ann!.user.name], "Queued too");
    const leaveOther = () => h.http(`/api/conversations/${other.id}/leave`, { method: "POST", token: ann!.token });
    const addDan = () => addMembers(ann!.token, other.id, { memberNames: [dan!.user.name] });
    const [leftOther, notAdded] = await queued(other.id, leaveOther, addDan);
    expect(leftOther.status).toBe(200);
    expect(notAdded.body.error).toMatchObject({ code: "forbidden" });
    expect(await membersOf(other.id)).toEqual([ben!.user.id, cat!.user.id].sort((a, b) => a - b));
  });

  it("when the owner leaves, the member longest in the group takes their place: they may remove people and delete it", async () => {
    // dan's account is older than ben's and cat's, but he joins later: the one who was there from the start wins.
    const [ann, dan, ben, cat] = [await user("ann"), await user("dan"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name, cat.user.name], "Handed on");
    const annSocket = await h.connect(ann.token, 0);
    for (let i = 0; i < 2; i++) await send(annSocket, group.id);
    expect((await addMembers(ann.token, group.id, { memberNames: [dan.user.name] })).status).toBe(200);
    const [benTab, catTab] = [await h.connect(ben.token, 1), await h.connect(cat.token, 0)];
    const benTold = nextEvent(benTab, "conversation:updated");
    const catTold = nextEvent(catTab, "conversation:updated");

    expect((await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: ann.token })).status).toBe(
      200,
    );
    expect((await benTold).conversation).toMatchObject({ id: group.id, canDelete: true });
    expect((await catTold).conversation).toMatchObject({ id: group.id, canDelete: false });
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: group.id } })).createdById).toBe(ben.user.id);
    expect((await removeMember(cat.token, group.id, dan.user.id)).body.error).toMatchObject({ code: "forbidden" });
    expect((await removeMember(ben.token, group.id, dan.user.id)).status).toBe(200);

    // ben leaves too: cat is the last one, and the owner; once she leaves, nobody is.
    expect((await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: ben.token })).status).toBe(
      200,
    );
    expect((await list(cat.token)).conversations.find((c) => c.id === group.id)).toMatchObject({ canDelete: true });
    expect((await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: cat.token })).status).toBe(
      200,
    );
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: group.id } })).createdById).toBeNull();
  });

  it("the owners migration gives a group whose creator left before the rule its heir, and leaves other groups alone", async () => {
    const [ann, dan, ben, cat] = [await user("ann"), await user("dan"), await user("ben"), await user("cat")];
    const orphan = await create(ann.token, [ben.user.name, cat.user.name], "Orphaned");
    await send(await h.connect(ann.token, 0), orphan.id);
    expect((await addMembers(ann.token, orphan.id, { memberNames: [dan.user.name] })).status).toBe(200);
    const kept = await create(cat.token, [ann.user.name, ben.user.name], "Kept");
    // ann left before the rule: her membership went, and the group kept her as its owner.
    await h.db.membership.delete({
      where: { userId_conversationId: { userId: ann.user.id, conversationId: orphan.id } },
    });
    const sql = await readFile(
      new URL("../../prisma/migrations/20261214000000_group_owners/migration.sql", import.meta.url),
      "utf8",
    );
    await poolOf(h.db).query(sql);
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: orphan.id } })).createdById).toBe(ben.user.id);
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: kept.id } })).createdById).toBe(cat.user.id);
  });

  it("a removal replayed by the relay (the instance died after its commit) still takes the group out", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name, cat.user.name], "Replay out");
    const annSocket = await h.connect(ann.token, 0);
    for (let i = 0; i < 2; i++) await send(annSocket, group.id);
    await expect.poll(async () => (await list(cat.token)).totalUnread).toBe(2);

    // What the removal's transaction writes, with nothing after it: as if the instance died at its commit.
    await h.db.$transaction([
      h.db.membership.delete({ where: { userId_conversationId: { userId: cat.user.id, conversationId: group.id } } }),
      h.db.departure.create({ data: { userId: cat.user.id, conversationId: group.id } }),
      h.db.groupLeave.create({ data: { userId: cat.user.id, conversationId: group.id, removedById: ann.user.id } }),
      h.db.outboxEvent.create({ data: { kind: "remove", conversationId: group.id, userId: cat.user.id, seq: 0 } }),
    ]);
    expect((await list(cat.token)).conversations.map((c) => c.id)).not.toContain(group.id);
    // (The last send's own entry may still wait for the next group's call to complete it: replayed too, harmlessly.)
    expect(await h.instances[1]!.app.relay.runOnce(0)).toMatchObject({ failed: 0 });
    expect(await h.db.outboxEvent.count({ where: { kind: "remove", userId: cat.user.id } })).toBe(0);
    expect(await list(cat.token)).toMatchObject({ totalUnread: 0 });
  });
});
