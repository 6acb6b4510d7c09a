import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Snapshot } from "../contracts/index.ts";
import { nextEvent, startHarness, type Harness } from "../testing/harness.ts";
import type { ClientSocket } from "../testing/harness.ts";
import { MAX_BLOCKS } from "./blocks.service.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness(2, {
    limits: { block: { points: 12, durationS: 600 }, lookup: { points: 10, durationS: 600 } },
  });
});
afterAll(() => h.close());

type Who = Awaited<ReturnType<Harness["signUp"]>>;

const block = (who: Who, body: unknown, instance = 0) =>
  h.http("/api/blocks", { method: "POST", token: who.token, body: JSON.stringify(body), instance });
const unblock = (who: Who, id: number | string) => h.http(`/api/blocks/${id}`, { method: "DELETE", token: who.token });
const blocked = (who: Who) => h.http("/api/blocks", { token: who.token });
const converse = (who: Who, memberNames: string[], title?: string) =>
  h.http("/api/conversations", {
    method: "POST",
    token: who.token,
    body: JSON.stringify(title === undefined ? { memberNames } : { memberNames, title }),
  });
const send = (socket: ClientSocket, conversationId: number, clientMsgId: string) =>
  socket.emitWithAck("message:send", { conversationId, clientMsgId, content: clientMsgId });
async function unreadOf(socket: ClientSocket, conversationId: number) {
  const ack = (await socket.emitWithAck("sync")) as { ok: true; snapshot: Snapshot };
  return {
    total: ack.snapshot.totalUnread,
    here: ack.snapshot.conversations.find((c) => c.id === conversationId)?.unreadCount ?? 0,
  };
}

/** How many of this database's statements wait on a lock (a row's, or an advisory one). */
const waitingOnLocks = async () =>
  (
    await h.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'`
  )[0]!.n;
const until = async (done: () => Promise<boolean>) => {
  while (!(await done())) await new Promise((resolve) => setTimeout(resolve, 20));
};

/**
 * Runs `work` in a transaction that holds what it takes until `release` is called, then rolls it back; resolves
 * `holding` once `work` is done.
 */
function hold(work: (tx: Parameters<Parameters<Harness["db"]["$transaction"]>[0]>[0]) => Promise<unknown>) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held!: () => void;
  const holding = new Promise<void>((resolve) => (held = resolve));
  const done = h.db
    .$transaction(
      async (tx) => {
        await work(tx);
        held();
        await released;
        throw new Error("rolled back");
      },
      { timeout: 10_000 },
    )
    .catch(() => undefined);
  return { holding, release: async () => (release(), await done) };
}

describe("blocking someone", () => {
  it("blocks by name in any letter case, once, lists and unblocks, and tells every tab of the blocker", async () => {
    const ann = await h.signUp("bl_ann");
    const mal = await h.signUp("bl_Mal");
    const otherTab = await h.connect(ann.token, 1);

    // The list's version: 0 before any change, one more at each.
    expect((await blocked(ann)).body).toEqual({ ok: true, blocked: [], version: 0 });
    const pushed = nextEvent(otherTab, "blocks:changed");
    const first = await block(ann, { name: "BL_MAL" });
    expect(first).toMatchObject({
      status: 200,
      body: { ok: true, blocked: [{ id: mal.user.id, name: "bl_Mal" }], version: 1 },
    });
    expect(await pushed).toEqual({ blocked: [{ id: mal.user.id, name: "bl_Mal" }], version: 1 });
    const pushes: number[] = [];
    otherTab.on("blocks:changed", (list: { version: number }) => pushes.push(list.version));
    // Blocking again changes nothing: the same list and version, and no push.
    const again = await block(ann, { name: "bl_mal" });
    expect(again.body).toEqual({ ok: true, blocked: [{ id: mal.user.id, name: "bl_Mal" }], version: 1 });
    expect((await blocked(ann)).body).toEqual({
      ok: true,
      blocked: [{ id: mal.user.id, name: "bl_Mal" }],
      version: 1,
    });
    // Blocking is one way: the blocked person's own list is empty.
    expect((await blocked(mal)).body).toEqual({ ok: true, blocked: [], version: 0 });

    const unpushed = nextEvent(otherTab, "blocks:changed");
    const undone = await unblock(ann, mal.user.id);
    expect(undone).toMatchObject({ status: 200, body: { ok: true, blocked: [] } });
    expect(undone.body.version).toBe(2);
    expect(await unpushed).toEqual({ blocked: [], version: 2 });
    // Unblocking someone not blocked, or an id nobody has, changes nothing and is no error: no new version, no push.
    expect(await unblock(ann, mal.user.id)).toMatchObject({ status: 200, body: { ok: true, blocked: [], version: 2 } });
    expect(await unblock(ann, 2_000_000_000)).toMatchObject({ status: 200, body: { ok: true, version: 2 } });
    // A change after them is the next push: none came in between.
    const last = nextEvent(otherTab, "blocks:changed");
    await block(ann, { name: "bl_mal" });
    expect((await last).version).toBe(3);
    expect(pushes).toEqual([2, 3]);
  });

  it("numbers the list's changes, so of any two lists answered or pushed the higher version is the newer", async () => {
    const ann = await h.signUp("bv_ann");
    const others = await Promise.all(["bv_a", "bv_b", "bv_c", "bv_d"].map((name) => h.signUp(name)));
    const otherTab = await h.connect(ann.token, 1);
    const pushes: { blocked: { id: number }[]; version: number }[] = [];
    otherTab.on("blocks:changed", (list) => pushes.push(list));

    // Four blocks at once, through both instances: answers and pushes may be read and arrive in any order.
    const answers = await Promise.all(others.map((o, i) => block(ann, { name: o.user.name }, i % 2)));
    for (const answer of answers) expect(answer.status).toBe(200);
    await until(async () => pushes.length === 4);
    const final = (await blocked(ann)).body;
    expect(final.blocked.map((u: { id: number }) => u.id).sort()).toEqual(others.map((o) => o.user.id).sort());

    const lists = [...answers.map((a) => a.body as { blocked: { id: number }[]; version: number }), ...pushes];
    // The same version is the same list; a higher one holds everything a lower one does (blocks only add here).
    for (const a of lists) {
      for (const b of lists) {
        const ids = (l: typeof a) => l.blocked.map((u) => u.id).sort();
        if (a.version === b.version) expect(ids(a)).toEqual(ids(b));
        if (a.version > b.version) expect(ids(a)).toEqual(expect.arrayContaining(ids(b)));
      }
    }
    // The newest of them is the list as it is now.
    const newest = Math.max(...lists.map((l) => l.version));
    expect(newest).toBe(final.version);
    expect(lists.find((l) => l.version === newest)!.blocked).toEqual(final.blocked);
  });

  it("answers bad input, oneself, bots, unknown names and strangers without a session with a typed error", async () => {
    const ann = await h.signUp("bi_ann");
    await h.db.user.create({ data: { name: "bi_bot", isBot: true } });
    const cases: [unknown, number, string, RegExp][] = [
      [{}, 400, "invalid", /name/i],
      [{ name: 7 }, 400, "invalid", /name/i],
      [{ name: "bad name!" }, 400, "invalid", /1–32 characters/],
      [{ name: "bi_ann", extra: 1 }, 400, "invalid", /extra/],
      [{ name: "BI_ANN" }, 400, "invalid", /^You cannot block yourself\.$/],
      [{ name: "bi_nobody" }, 404, "not_found", /^No user called 'bi_nobody'\.$/],
      [{ name: "bi_bot" }, 404, "not_found", /^No user called 'bi_bot'\.$/],
    ];
    for (const [body, status, code, message] of cases) {
      expect(await block(ann, body)).toMatchObject({
        status,
        body: { ok: false, error: { code, message: expect.stringMatching(message) } },
      });
    }
    expect(await unblock(ann, "x1")).toMatchObject({
      status: 400,
      body: { error: { code: "invalid", message: "The user's id is a whole number in plain digits." } },
    });
    expect(await unblock(ann, 0)).toMatchObject({
      status: 400,
      body: { error: { code: "invalid", message: "The user's id must be at least 1." } },
    });
    expect(await h.http("/api/blocks")).toMatchObject({ status: 401, body: { error: { code: "unauthorized" } } });
    expect(await h.http("/api/blocks", { method: "POST", body: JSON.stringify({ name: "bi_ann" }) })).toMatchObject({
      status: 401,
    });
    expect(await h.db.block.count({ where: { blockerId: ann.user.id } })).toBe(0);
  });

  it("stops both from writing in their direct conversation, and counts nothing, until the blocker unblocks", async () => {
    const ann = await h.signUp("bw_ann");
    const mal = await h.signUp("bw_mal");
    const { body } = await converse(mal, [ann.user.name]);
    const conversationId = body.conversation.id as number;
    const annTab = await h.connect(ann.token);
    const malTab = await h.connect(mal.token, 1);
    expect(await send(malTab, conversationId, "before")).toMatchObject({ ok: true });
    expect(await unreadOf(annTab, conversationId)).toEqual({ total: 1, here: 1 });

    await block(ann, { name: "bw_mal" });
    expect(await send(malTab, conversationId, "after")).toEqual({
      ok: false,
      error: { code: "forbidden", message: "You cannot write in this conversation." },
    });
    expect(await send(annTab, conversationId, "reply")).toEqual({
      ok: false,
      error: { code: "forbidden", message: "You blocked this person; unblock them to write to them again." },
    });
    // A retry of a message stored before the block gets its first answer; nothing new is stored or counted.
    expect(await send(malTab, conversationId, "before")).toMatchObject({ ok: true, message: { seq: 1 } });
    expect(await h.db.message.count({ where: { conversationId } })).toBe(1);
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: conversationId } })).lastSeq).toBe(1);
    expect(await unreadOf(annTab, conversationId)).toEqual({ total: 1, here: 1 });

    await unblock(ann, mal.user.id);
    expect(await send(malTab, conversationId, "again")).toMatchObject({ ok: true, message: { seq: 2 } });
    expect(await unreadOf(annTab, conversationId)).toEqual({ total: 2, here: 2 });
  });

  it("keeps the blocked from starting a conversation with the blocker as if the name did not exist", async () => {
    const ann = await h.signUp("bc_ann");
    const mal = await h.signUp("bc_mal");
    const cat = await h.signUp("bc_cat");
    await block(ann, { name: "bc_mal" });

    const nobody = await converse(mal, ["bc_nobody"]);
    const direct = await converse(mal, ["bc_ann"]);
    expect(direct).toEqual({
      status: 404,
      body: { ok: false, error: { code: "not_found", message: "No user called 'bc_ann'." } },
    });
    expect(nobody.body.error.code).toBe(direct.body.error.code);
    expect(await converse(mal, ["bc_ann", "bc_cat"], "a group")).toMatchObject({
      status: 404,
      body: { error: { code: "not_found", message: "No user called 'bc_ann'." } },
    });
    // The blocker is told whom they blocked.
    expect(await converse(ann, ["bc_mal"])).toMatchObject({
      status: 403,
      body: { error: { code: "forbidden", message: "You blocked 'bc_mal'; unblock them first." } },
    });
    expect(await h.db.membership.count({ where: { userId: { in: [ann.user.id, mal.user.id] } } })).toBe(0);

    // Someone else may still put both in a group, and there the block changes nothing: mal's message counts for ann.
    const group = await converse(cat, ["bc_ann", "bc_mal"], "the club");
    expect(group.status).toBe(200);
    const annTab = await h.connect(ann.token);
    const malTab = await h.connect(mal.token);
    expect(await send(malTab, group.body.conversation.id, "group-message")).toMatchObject({ ok: true });
    expect(await unreadOf(annTab, group.body.conversation.id)).toEqual({ total: 1, here: 1 });
  });

  it("answers whom one blocked alike whether or not they blocked one back, so blocking tells nobody of a block", async () => {
    const ann = await h.signUp("bb_ann");
    const mal = await h.signUp("bb_mal");
    await h.signUp("bb_cat");
    // ann blocked mal; mal blocks ann and cat, and names each: both answers must be the same words.
    await block(ann, { name: "bb_mal" });
    await block(mal, { name: "bb_ann" });
    await block(mal, { name: "bb_cat" });
    expect(await converse(mal, ["bb_cat"])).toMatchObject({
      status: 403,
      body: { error: { code: "forbidden", message: "You blocked 'bb_cat'; unblock them first." } },
    });
    expect(await converse(mal, ["bb_ann"])).toMatchObject({
      status: 403,
      body: { error: { code: "forbidden", message: "You blocked 'bb_ann'; unblock them first." } },
    });
    expect(await converse(mal, ["bb_ann", "bb_cat"], "a group")).toMatchObject({
      status: 403,
      body: { error: { code: "forbidden", message: "You blocked 'bb_ann', 'bb_cat'; unblock them first." } },
    });
    // A name nobody has is still named first.
    expect(await converse(mal, ["bb_ann", "bb_nobody"])).toMatchObject({
      status: 404,
      body: { error: { code: "not_found", message: "No user called 'bb_nobody'." } },
    });
  });

  it("stores no send that waited on the conversation's row past a block, and tells a blocker blocked back of their own block", async () => {
    const ann = await h.signUp("br_ann");
    const mal = await h.signUp("br_mal");
    const conversationId = (await converse(mal, [ann.user.name])).body.conversation.id as number;
    const annTab = await h.connect(ann.token);
    const malTab = await h.connect(mal.token, 1);
    expect(await send(malTab, conversationId, "before")).toMatchObject({ ok: true });
    const lastSeq = async () => (await h.db.conversation.findUniqueOrThrow({ where: { id: conversationId } })).lastSeq;

    // Something else holds the conversation's row (as a group of sends ahead would): mal's send waits on it, and
    // ann blocks mal meanwhile. Whatever the order, nothing may be stored after ann's block has been answered.
    const holder = hold((tx) => tx.$queryRaw`SELECT 1 FROM "Conversation" WHERE "id" = ${conversationId} FOR UPDATE`);
    await holder.holding;
    // Waits for what PostgreSQL says, not for time: the send is waiting on a lock before ann blocks, and the block is
    // waiting too (or, as before the fix, has been answered) before the row is let go.
    const racing = send(malTab, conversationId, "racing");
    await until(async () => (await waitingOnLocks()) === 1);
    let answered = false;
    const blocking = block(ann, { name: "br_mal" }).then(async (res) => {
      answered = true;
      return { res, seq: await lastSeq() };
    });
    await until(async () => answered || (await waitingOnLocks()) === 2);
    await holder.release();
    await racing;
    const { res, seq } = await blocking;
    expect(res.status).toBe(200);
    expect(await lastSeq()).toBe(seq);
    expect(await send(malTab, conversationId, "after")).toMatchObject({ ok: false, error: { code: "forbidden" } });

    // Both blocked: each hears of their own block, so neither learns of the other's.
    await block(mal, { name: "br_ann" });
    expect(await send(annTab, conversationId, "reply")).toEqual({
      ok: false,
      error: { code: "forbidden", message: "You blocked this person; unblock them to write to them again." },
    });
  });

  it("closes a direct conversation whose creation raced the block: it is made before the block, then blocked", async () => {
    const ann = await h.signUp("bd_ann");
    const mal = await h.signUp("bd_mal");
    const directKey = `${Math.min(ann.user.id, mal.user.id)}:${Math.max(ann.user.id, mal.user.id)}`;
    // An uncommitted row with the pair's key holds mal's creation at its insert, after it looked for blocks.
    const holder = hold(
      (tx) => tx.$executeRaw`INSERT INTO "Conversation" ("kind", "directKey") VALUES ('direct', ${directKey})`,
    );
    await holder.holding;
    const creating = converse(mal, ["bd_ann"]);
    await until(async () => (await waitingOnLocks()) === 1);
    let answered = false;
    const blocking = block(ann, { name: "bd_mal" }).then((res) => ((answered = true), res));
    // Before the pairs' locks the block was answered here, and the conversation made after it, unblocked.
    await until(async () => answered || (await waitingOnLocks()) === 2);
    await holder.release();
    const created = await creating;
    expect((await blocking).status).toBe(200);

    expect(created.status).toBe(200);
    const conversationId = created.body.conversation.id as number;
    expect(await h.db.conversation.findUniqueOrThrow({ where: { id: conversationId } })).toMatchObject({
      blocked: true,
    });
    const malTab = await h.connect(mal.token);
    expect(await send(malTab, conversationId, "through")).toMatchObject({ ok: false, error: { code: "forbidden" } });
    expect(await h.db.message.count({ where: { conversationId } })).toBe(0);
  });

  it("creates no group with the blocker after the block was answered, however the two race", async () => {
    const ann = await h.signUp("bg_ann");
    const mal = await h.signUp("bg_mal");
    const cat = await h.signUp("bg_cat");
    const together = () =>
      h.db.conversation.count({
        where: { AND: [ann, mal].map((u) => ({ memberships: { some: { userId: u.user.id } } })) },
      });
    // cat's row, locked, holds mal's group at its members' insert (after it looked for blocks); ann's block of mal
    // needs nothing of cat's.
    const holder = hold((tx) => tx.$queryRaw`SELECT 1 FROM "User" WHERE "id" = ${cat.user.id} FOR UPDATE`);
    await holder.holding;
    const creating = converse(mal, ["bg_ann", "bg_cat"], "the raced group");
    await until(async () => (await waitingOnLocks()) === 1);
    let answered = false;
    const blocking = block(ann, { name: "bg_mal" }).then(async (res) => {
      answered = true;
      return { res, groups: await together() };
    });
    await until(async () => answered || (await waitingOnLocks()) === 2);
    await holder.release();
    const created = await creating;
    const { res, groups } = await blocking;
    expect(res.status).toBe(200);
    // The group was made before the block (the block waited for it), so it existed when the block was answered.
    expect(created.status).toBe(200);
    expect(await together()).toBe(groups);
    // And after the block, mal can make no other with ann.
    expect((await converse(mal, ["bg_ann", "bg_cat"], "another")).status).toBe(404);
  });

  it("keeps a direct conversation closed while either of the two blocks the other, however blocks and unblocks race", async () => {
    const ann = await h.signUp("bf_ann");
    const mal = await h.signUp("bf_mal");
    const conversationId = (await converse(ann, ["bf_mal"])).body.conversation.id as number;
    const closed = async () => (await h.db.conversation.findUniqueOrThrow({ where: { id: conversationId } })).blocked;
    await block(ann, { name: "bf_mal" });
    expect(await closed()).toBe(true);

    // With the conversation's row held, mal blocks ann, then ann unblocks mal: each writes its block, then waits to
    // set the flag. Without the pair's lock, ann's unblock, second in the row's queue, set it from what it saw
    // before mal's block was committed: open, with mal's block standing.
    const holder = hold((tx) => tx.$queryRaw`SELECT 1 FROM "Conversation" WHERE "id" = ${conversationId} FOR UPDATE`);
    await holder.holding;
    const blocking = block(mal, { name: "bf_ann" }, 1);
    await until(async () => (await waitingOnLocks()) === 1);
    const unblocking = unblock(ann, mal.user.id);
    await until(async () => (await waitingOnLocks()) === 2);
    await holder.release();
    expect((await blocking).status).toBe(200);
    expect((await unblocking).status).toBe(200);
    expect(await closed()).toBe(true);
    const annTab = await h.connect(ann.token);
    expect(await send(annTab, conversationId, "through")).toEqual({
      ok: false,
      error: { code: "forbidden", message: "You cannot write in this conversation." },
    });

    await unblock(mal, ann.user.id);
    expect(await closed()).toBe(false);
    expect(await send(annTab, conversationId, "open-again")).toMatchObject({ ok: true });
  });

  it(`blocks at most ${MAX_BLOCKS} people, and limits blocks and unblocks per user`, async () => {
    const ann = await h.signUp("bm_ann");
    const last = await h.signUp("bm_last");
    await h.db.user.createMany({ data: Array.from({ length: MAX_BLOCKS }, (_, i) => ({ name: `bm_u${i}` })) });
    const many = await h.db.user.findMany({ where: { name: { startsWith: "bm_u" } }, select: { id: true } });
    await h.db.block.createMany({ data: many.map((u) => ({ blockerId: ann.user.id, blockedId: u.id })) });

    const before = (await blocked(ann)).body.version;
    expect(await block(ann, { name: "bm_last" })).toMatchObject({
      status: 409,
      body: { error: { code: "conflict", message: expect.stringMatching(/^You have blocked 1000 people/) } },
    });
    // Refused, it changed nothing, the version included.
    expect((await blocked(ann)).body.version).toBe(before);
    // Blocking someone already blocked is still one block, at the cap too.
    expect((await block(ann, { name: "bm_u0" })).status).toBe(200);
    await unblock(ann, many[0]!.id);
    expect((await block(ann, { name: "bm_last" })).body.blocked).toContainEqual({ id: last.user.id, name: "bm_last" });

    // 12 points a user: 4 used above; 8 more pass, the next is refused, on either instance.
    for (let i = 0; i < 8; i++) expect((await unblock(ann, last.user.id)).status).toBe(200);
    expect(await block(ann, { name: "bm_last" }, 1)).toMatchObject({
      status: 429,
      // The window is 10 minutes here: the refusal says when, not "shortly".
      body: {
        error: {
          code: "rate_limited",
          message: expect.stringMatching(/^Too many blocks and unblocks; try again in (9|10) minutes\.$/),
        },
      },
    });
    // Reading the list is limited as name look-ups are (10 here, 2 read above): a reload storm cannot read 1000 rows
    // at will.
    for (let i = 0; i < 8; i++) expect((await blocked(ann)).status).toBe(200);
    expect(await blocked(ann)).toMatchObject({ status: 429, body: { error: { code: "rate_limited" } } });
  });
});
