import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nextEvent, startHarness, type Harness } from "../testing/harness.ts";
import { testApi } from "../testing/api.ts";
import { limitSubject, userKeys } from "../redis/keys.ts";
import pg from "pg";
import { createDb, poolOf } from "../db/prisma.ts";
import { createSnapshotService } from "./snapshot.service.ts";
import { createUnreadService } from "./unread.service.ts";
import type { ConversationDTO } from "../contracts/index.ts";

// The conversation list a page loads and a tab syncs from: each conversation with its newest message, read from
// the database by (conversation, lastSeq).
let h: Harness;
beforeAll(async () => {
  h = await startHarness(1);
});
afterAll(() => h.close());

const { user, create, send, list } = testApi(() => h);

describe("the conversation list", () => {
  it("shows each conversation's newest message as stored, and none for a conversation without messages", async () => {
    const [a, b, c] = [await user("lma"), await user("lmb"), await user("lmc")];
    const direct = await create(a.token, [b.user.name]);
    const quiet = await create(a.token, [c.user.name]);
    const group = await create(a.token, [b.user.name, c.user.name], "three");
    const [sa, sb, sc] = [await h.connect(a.token), await h.connect(b.token), await h.connect(c.token)];
    await send(sa, direct.id, "first");
    await send(sb, direct.id, "second, from b");
    await send(sc, group.id, "from c");
    await send(sa, group.id, "from a");
    await send(sc, group.id, "c again");

    const listed = new Map((await list(a.token)).conversations.map((conv) => [conv.id, conv]));
    expect(listed.size).toBe(3);
    for (const conv of [direct, group]) {
      const newest = await h.db.message.findFirstOrThrow({
        where: { conversationId: conv.id },
        orderBy: { seq: "desc" },
        include: { sender: { select: { name: true } } },
      });
      expect(listed.get(conv.id)?.lastMessage).toEqual({
        id: newest.id,
        conversationId: conv.id,
        seq: newest.seq,
        senderId: newest.senderId,
        senderName: newest.sender.name,
        content: newest.content,
        createdAt: newest.createdAt.toISOString(),
        clientMsgId: newest.clientMsgId,
      });
    }
    expect(listed.get(direct.id)?.lastMessage).toMatchObject({
      seq: 2,
      content: "second, from b",
      senderName: b.user.name,
    });
    expect(listed.get(group.id)?.lastMessage).toMatchObject({ seq: 3, content: "c again", senderName: c.user.name });
    expect(listed.get(quiet.id)?.lastMessage).toBeNull();
  });

  it("lists each conversation's members, the viewer's cursor and title, as describe() answers for one", async () => {
    const [a, b, c] = [await user("lna"), await user("lnb"), await user("lnc")];
    const direct = await create(a.token, [b.user.name]);
    // describe() answers the creator: an untitled group is titled by its other members.
    const untitled = await create(a.token, [c.user.name, b.user.name]);
    const withBot = await create(a.token, [b.user.name, c.user.name], "with a bot");
    const bot = await h.db.user.create({ data: { name: `lnbot${Date.now().toString(36)}`, isBot: true } });
    await h.db.membership.create({ data: { userId: bot.id, conversationId: withBot.id } });
    const sa = await h.connect(a.token);
    const sb = await h.connect(b.token);
    await send(sa, direct.id, "one");
    await send(sb, direct.id, "two");
    await send(sb, direct.id, "three");

    const listed = new Map((await list(a.token)).conversations.map((conv) => [conv.id, conv]));
    const byId = (x: { id: number }, y: { id: number }) => x.id - y.id;
    // The sender's cursor moves to their own message and no further.
    expect(listed.get(direct.id)).toMatchObject({ title: b.user.name, lastSeq: 3, lastReadSeq: 1, unreadCount: 2 });
    expect(listed.get(direct.id)?.members).toEqual([a.user, b.user].sort(byId));
    expect(listed.get(untitled.id)).toEqual(untitled);
    expect(listed.get(untitled.id)?.members).toEqual([a.user, b.user, c.user].sort(byId));
    expect(listed.get(withBot.id)?.members).toEqual(
      [a.user, b.user, c.user, { id: bot.id, name: bot.name, bot: true }].sort(byId),
    );
  });

  it("reads the stored times as UTC whatever the process' time zone", async () => {
    const [a, b] = [await user("lta"), await user("ltb")];
    const direct = await create(a.token, [b.user.name]);
    await send(await h.connect(a.token), direct.id, "when?");
    const stored = await h.db.message.findFirstOrThrow({ where: { conversationId: direct.id } });
    const conversation = await h.db.conversation.findUniqueOrThrow({ where: { id: direct.id } });
    const snapshots = createSnapshotService({ db: h.db, unread: createUnreadService({ redis: h.redis, db: h.db }) });
    const zone = process.env.TZ;
    // pg reads a timestamp without time zone in the process' own zone; the list's statements must not let it.
    process.env.TZ = "Asia/Kolkata";
    try {
      expect(new Date(2026, 0, 1).getTimezoneOffset()).toBe(-330); // the zone took effect in this process
      const listed = (await snapshots.snapshot(a.user)).conversations.find((conv) => conv.id === direct.id);
      expect(listed?.lastMessage?.createdAt).toBe(stored.createdAt.toISOString());
      expect(listed?.createdAt).toBe(conversation.createdAt.toISOString());
      expect((await snapshots.describe(direct.id, b.user.id)).lastMessage?.createdAt).toBe(
        stored.createdAt.toISOString(),
      );
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it("reads the stored times as ISO text where the database is set to another DateStyle", async () => {
    const [a, b] = [await user("lda"), await user("ldb")];
    const direct = await create(a.token, [b.user.name]);
    await send(await h.connect(a.token), direct.id, "dd/mm?");
    const stored = await h.db.message.findFirstOrThrow({ where: { conversationId: direct.id } });
    const pool = poolOf(h.db);
    const url = pool.options.connectionString!;
    const { name } = (await pool.query<{ name: string }>("SELECT current_database() AS name")).rows[0]!;
    await pool.query(`ALTER DATABASE "${name}" SET DateStyle = 'SQL, DMY'`);
    const plain = new pg.Client({ connectionString: url });
    const db = createDb(url);
    try {
      // A connection that does not ask for ISO now gets the database's style…
      await plain.connect();
      expect((await plain.query<{ DateStyle: string }>("SHOW DateStyle")).rows[0]?.DateStyle).toBe("SQL, DMY");
      // …and Tally's connections ask for it.
      const snapshots = createSnapshotService({ db, unread: createUnreadService({ redis: h.redis, db }) });
      const listed = (await snapshots.snapshot(a.user)).conversations.find((conv) => conv.id === direct.id);
      expect(listed?.lastMessage?.createdAt).toBe(stored.createdAt.toISOString());
    } finally {
      await pool.query(`ALTER DATABASE "${name}" RESET DateStyle`);
      // The pool itself (createDb made it): after Prisma's $disconnect one of its connections was still open when the
      // harness dropped the database.
      await Promise.allSettled([plain.end(), poolOf(db).end()]);
    }
  });

  it("lists the newest activity first: a last message's time, or the creation's without one; ties by id", async () => {
    const [a, b, c] = [await user("loa"), await user("lob"), await user("loc")];
    const older = await create(a.token, [b.user.name]);
    const quiet = await create(a.token, [b.user.name, c.user.name], "quiet");
    const answered = await create(a.token, [b.user.name, c.user.name], "answered");
    const tied = await create(a.token, [b.user.name, c.user.name], "tied");
    const sa = await h.connect(a.token);
    await send(sa, older.id, "late");
    await send(sa, answered.id, "earlier");
    // Times set outright, so the order is the test's, not the machine's: `tied` is created at the instant of
    // `older`'s message (the higher id first), `answered` was answered before that, `quiet` has only its creation.
    // Whole seconds, and milliseconds PostgreSQL writes with a leading zero (.007) or without its trailing one (.12).
    const t0 = Date.UTC(2026, 0, 2, 3, 4, 5, 0);
    const at = (ms: number) => new Date(t0 + ms);
    await h.db.conversation.update({ where: { id: older.id }, data: { createdAt: at(0) } });
    await h.db.message.updateMany({ where: { conversationId: older.id }, data: { createdAt: at(5000) } });
    await h.db.conversation.update({ where: { id: quiet.id }, data: { createdAt: at(3120) } });
    await h.db.conversation.update({ where: { id: answered.id }, data: { createdAt: at(1000) } });
    await h.db.message.updateMany({ where: { conversationId: answered.id }, data: { createdAt: at(4007) } });
    await h.db.conversation.update({ where: { id: tied.id }, data: { createdAt: at(5000) } });
    // The list is ordered by the row's last activity, which sends keep equal to these times; set here with them.
    for (const [conv, ms] of [
      [older, 5000],
      [quiet, 3120],
      [answered, 4007],
      [tied, 5000],
    ] as const) {
      await h.db.conversation.update({ where: { id: conv.id }, data: { lastActivityAt: at(ms) } });
    }

    const listed = (await list(a.token)).conversations;
    expect(listed.map((conv) => conv.id)).toEqual([tied.id, older.id, answered.id, quiet.id]);
    expect(listed.map((conv) => [conv.createdAt, conv.lastMessage?.createdAt ?? null])).toEqual([
      [at(5000).toISOString(), null],
      [at(0).toISOString(), at(5000).toISOString()],
      [at(1000).toISOString(), at(4007).toISOString()],
      [at(3120).toISOString(), null],
    ]);
  });

  it("keeps a conversation's last activity at its newest message's time, as a send stores it", async () => {
    const [a, b] = [await user("lta"), await user("ltb")];
    const direct = await create(a.token, [b.user.name]);
    const created = await h.db.conversation.findUniqueOrThrow({ where: { id: direct.id } });
    expect(created.lastActivityAt).toEqual(created.createdAt);
    const sa = await h.connect(a.token);
    const sent = await send(sa, direct.id, "now");
    if (!sent.ok) throw new Error(sent.error.message);
    const after = await h.db.conversation.findUniqueOrThrow({ where: { id: direct.id } });
    expect(after.lastActivityAt.toISOString()).toBe(sent.message.createdAt);
    expect(after.lastActivityAt.getTime()).toBeGreaterThanOrEqual(created.lastActivityAt.getTime());
  });

  it("pages the list: a first page with every count, then pages after a cursor, in the whole list's order", async () => {
    const [a, b, c] = [await user("lpa"), await user("lpb"), await user("lpc")];
    const convs = [];
    for (let i = 0; i < 7; i++) convs.push(await create(b.token, [a.user.name, c.user.name], `page ${i}`));
    const sb = await h.connect(b.token);
    // Messages in 0, 2, 4 and 6 (6 mentions a): unread for a in those, and two more in 0 so that it is the newest.
    for (const i of [2, 4, 6, 0]) await send(sb, convs[i]!.id, i === 6 ? `hi @${a.user.name}` : "hi");
    await send(sb, convs[0]!.id, "again");
    const sa = await h.connect(a.token);
    expect(await sa.emitWithAck("conversation:mute", { conversationId: convs[4]!.id, muted: true })).toMatchObject({
      ok: true,
    });

    const whole = await list(a.token);
    expect(whole.more).toBe(false);
    const order = whole.conversations.map((c) => c.id);
    expect(order.slice(0, 4)).toEqual([convs[0]!.id, convs[6]!.id, convs[4]!.id, convs[2]!.id]);

    const first = await sa.emitWithAck("sync", { limit: 3 });
    if (!first.ok) throw new Error(first.error.message);
    const { snapshot } = first;
    expect(snapshot.conversations.map((c) => c.id)).toEqual(order.slice(0, 3));
    expect(snapshot.more).toBe(true);
    // Every count, listed or not (2 is on no page yet), and the totals are their sum: muted 4 counts its mentions.
    const byId = (x: number[], y: number[]) => x[0]! - y[0]!;
    expect([...snapshot.unread].sort(byId)).toEqual(
      [
        [convs[0]!.id, 2, 0, 0, 0],
        [convs[2]!.id, 1, 0, 0, 0],
        [convs[4]!.id, 1, 0, 1, 0],
        [convs[6]!.id, 1, 1, 0, 0],
      ].sort(byId),
    );
    expect([...whole.unread].sort(byId)).toEqual([...snapshot.unread].sort(byId));
    // Every conversation's id, listed or not.
    const numeric = (x: number, y: number) => x - y;
    expect([...snapshot.conversationIds].sort(numeric)).toEqual(convs.map((c) => c.id).sort(numeric));
    expect([...whole.conversationIds].sort(numeric)).toEqual(convs.map((c) => c.id).sort(numeric));
    expect(snapshot).toMatchObject({ totalUnread: 4, totalMentions: 1, version: whole.version, epoch: whole.epoch });
    expect(snapshot.conversations).toEqual(whole.conversations.slice(0, 3));

    // The next pages continue from the oldest row of the one before, with that row's counts.
    const cursor = (c: ConversationDTO) => ({ at: c.lastMessage?.createdAt ?? c.createdAt, id: c.id });
    const pages: ConversationDTO[][] = [snapshot.conversations];
    let more = snapshot.more;
    while (more) {
      const next = await sa.emitWithAck("conversation:list", { before: cursor(pages.at(-1)!.at(-1)!), limit: 3 });
      if (!next.ok) throw new Error(next.error.message);
      pages.push(next.conversations);
      more = next.more;
    }
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(pages.flat()).toEqual(whole.conversations);

    // Over HTTP the same: `GET /api/conversations?limit=` is the first page, `…/list?at=&id=&limit=` the next ones.
    const get = async (path: string) => {
      const res = await h.http(path, { token: a.token });
      expect(res.status, path).toBe(200);
      return res.body;
    };
    expect(await get("/api/conversations?limit=3")).toEqual({ ok: true, ...snapshot });
    const httpPages: ConversationDTO[][] = [(await get("/api/conversations?limit=3")).conversations];
    for (let more = true; more;) {
      const { at, id } = cursor(httpPages.at(-1)!.at(-1)!);
      const next = await get(`/api/conversations/list?at=${encodeURIComponent(at)}&id=${id}&limit=3`);
      httpPages.push(next.conversations);
      more = next.more;
    }
    expect(httpPages).toEqual(pages);

    // A message in the oldest conversation brings it to the first page.
    await send(sb, convs[1]!.id, "back");
    const again = await sa.emitWithAck("sync", { limit: 1 });
    expect(again).toMatchObject({ ok: true, snapshot: { more: true, conversations: [{ id: convs[1]!.id }] } });
  });

  it("leaves a direct conversation out of the other member's list until its first message, or until they start it too", async () => {
    const [a, b, c] = [await user("lha"), await user("lhb"), await user("lhc")];
    const [sa, sb] = [await h.connect(a.token), await h.connect(b.token)];
    const created: number[] = [];
    sb.on("conversation:created", ({ conversation }) => created.push(conversation.id));
    const groupsOfB = [];
    for (let i = 0; i < 3; i++) groupsOfB.push(await create(c.token, [b.user.name, a.user.name], `g${i}`));
    const direct = await create(a.token, [b.user.name]);
    // Newer than the direct conversation, so a page of b's list has it after a hidden one.
    const direct2 = await create(c.token, [b.user.name]);
    groupsOfB.push(await create(c.token, [a.user.name, b.user.name], "last"));
    // b's tab was told of the groups, in order, and of no direct conversation (the pushes to one socket keep order).
    await expect.poll(() => created.length).toBe(4);
    expect(created).toEqual(groupsOfB.map((g) => g.id));

    const numeric = (x: number, y: number) => x - y;
    const groupIds = groupsOfB.map((g) => g.id).sort(numeric);
    // The whole list, and a paged sync with its pages: the groups only; no row, no id.
    const whole = await list(b.token);
    expect(whole.conversations.map((x) => x.id).sort(numeric)).toEqual(groupIds);
    expect([...whole.conversationIds].sort(numeric)).toEqual(groupIds);
    const first = await sb.emitWithAck("sync", { limit: 2 });
    if (!first.ok) throw new Error(first.error.message);
    expect([...first.snapshot.conversationIds].sort(numeric)).toEqual(groupIds);
    const rows = [...first.snapshot.conversations];
    for (let more = first.snapshot.more; more;) {
      const last = rows.at(-1)!;
      const next = await sb.emitWithAck("conversation:list", {
        before: { at: last.lastMessage?.createdAt ?? last.createdAt, id: last.id },
        limit: 2,
      });
      if (!next.ok) throw new Error(next.error.message);
      rows.push(...next.conversations);
      more = next.more;
    }
    expect(rows.map((x) => x.id)).toEqual(whole.conversations.map((x) => x.id));
    // The creators see theirs.
    expect((await list(a.token)).conversations.map((x) => x.id)).toContain(direct.id);
    expect((await list(c.token)).conversations.map((x) => x.id)).toContain(direct2.id);

    // Nor can b mute or mark it, by its id: a mark would count 1 in a badge whose list has no row for it.
    const forbidden = { ok: false, error: { code: "forbidden" } };
    expect(await sb.emitWithAck("conversation:markUnread", { conversationId: direct.id })).toMatchObject(forbidden);
    expect(await sb.emitWithAck("conversation:mute", { conversationId: direct.id, muted: true })).toMatchObject(
      forbidden,
    );
    // Nor read it, page its history, write first in it or delete it, by its id: the answers are those for an id that
    // does not exist, and nothing is written (the way to write first is to start the conversation).
    const readsBefore = await h.db.outboxEvent.count({ where: { userId: b.user.id } });
    expect(await sb.emitWithAck("conversation:read", { conversationId: direct.id, seq: 0 })).toMatchObject(forbidden);
    expect(await send(sb, direct.id, "found you")).toMatchObject(forbidden);
    // A send that mentions someone is refused before it is charged to the mention limit, as for an id that does not
    // exist: charged, b could tell the two apart by the limit's answer once it ran out.
    const mentionKey = `rl:mention:${limitSubject({ userId: b.user.id })}`;
    expect(await h.redis.get(mentionKey)).toBeNull();
    expect(await send(sb, direct.id, `@${a.user.name} found you`)).toMatchObject(forbidden);
    expect(await h.redis.get(mentionKey)).toBeNull();
    const history = await h.http(`/api/conversations/${direct.id}/messages`, { token: b.token });
    expect([history.status, history.body]).toMatchObject([403, forbidden]);
    const deleted = await h.http(`/api/conversations/${direct.id}`, { token: b.token, method: "DELETE" });
    expect([deleted.status, deleted.body]).toMatchObject([403, forbidden]);
    expect(await h.db.conversation.findUnique({ where: { id: direct.id } })).toMatchObject({ lastSeq: 0 });
    expect(await h.db.outboxEvent.count({ where: { userId: b.user.id } })).toBe(readsBefore);
    expect(await list(b.token)).toMatchObject({ unread: [], totalUnread: 0 });
    // The creator can.
    expect(await sa.emitWithAck("conversation:mute", { conversationId: direct.id, muted: true })).toMatchObject({
      ok: true,
    });
    expect(await sa.emitWithAck("conversation:mute", { conversationId: direct.id, muted: false })).toMatchObject({
      ok: true,
    });

    // The first message brings it: b's tab hears of the message and finds the row on its next sync.
    const arrived = nextEvent(sb, "message:new", ({ message }) => message.conversationId === direct.id);
    expect(await send(sa, direct.id, "hello")).toMatchObject({ ok: true });
    await arrived;
    expect((await list(b.token)).conversations.find((x) => x.id === direct.id)).toMatchObject({
      lastSeq: 1,
      unreadCount: 1,
      lastMessage: { content: "hello" },
    });

    // b starts the other one too: it joins b's list, and b's tabs are told; c's list has it still.
    const sb2 = await h.connect(b.token);
    const told = nextEvent(sb2, "conversation:created", ({ conversation }) => conversation.id === direct2.id);
    expect((await create(b.token, [c.user.name])).id).toBe(direct2.id);
    expect((await told).conversation).toMatchObject({ kind: "direct", title: c.user.name, lastSeq: 0 });
    expect((await list(b.token)).conversations.map((x) => x.id)).toContain(direct2.id);
    expect((await list(c.token)).conversations.map((x) => x.id)).toContain(direct2.id);
    // Starting it again tells nobody anything new.
    expect((await create(b.token, [c.user.name])).id).toBe(direct2.id);
    expect(created.filter((id) => id === direct2.id)).toHaveLength(1);
  });

  it("makes a group of two, not a direct conversation, of one other member with a title", async () => {
    const [a, b] = [await user("lta"), await user("ltb")];
    const titled = await create(a.token, [b.user.name], "Project X");
    expect(titled).toMatchObject({ kind: "group", title: "Project X" });
    // The pair's direct conversation is another one, and a group shows to its members at once.
    expect((await create(a.token, [b.user.name])).id).not.toBe(titled.id);
    expect((await list(b.token)).conversations.map((c) => c.id)).toContain(titled.id);
  });

  it("refuses a page it cannot read as one, and changes nothing", async () => {
    const [a, b] = [await user("lra"), await user("lrb")];
    await create(a.token, [b.user.name]);
    const sa = await h.connect(a.token);
    const at = new Date().toISOString();
    for (const bad of [
      { limit: 0 },
      { limit: 201 },
      { limit: 2.5 },
      { limit: "3" },
      { limit: 3, extra: 1 },
      [],
      "all",
    ]) {
      // (null is no input, as `emit("sync", undefined, ack)` sends it: the whole list, security.int.test.ts.)
      expect(await sa.emitWithAck("sync", bad as never)).toMatchObject({ ok: false, error: { code: "invalid" } });
    }
    for (const bad of [
      {},
      { before: { at, id: 1 } },
      { before: { at: "yesterday", id: 1 }, limit: 3 },
      { before: { at: at.replace("Z", "+00:00"), id: 1 }, limit: 3 },
      { before: { at: "2026-13-45T99:99:99.999Z", id: 1 }, limit: 3 },
      { before: { at: "2026-02-31T00:00:00.000Z", id: 1 }, limit: 3 },
      { before: { at: "0000-01-01T00:00:00.000Z", id: 1 }, limit: 3 },
      { before: { at: '2026-01-01T00:00:00.000Z\'; DROP TABLE "User"; --', id: 1 }, limit: 3 },
      { before: { at, id: 0 }, limit: 3 },
      { before: { at, id: -1 }, limit: 3 },
      { before: { at, id: 1 }, limit: 500 },
    ]) {
      expect(await sa.emitWithAck("conversation:list", bad as never)).toMatchObject({
        ok: false,
        error: { code: "invalid" },
      });
    }
    // The same refusals over HTTP: 400 with the code.
    const iso = encodeURIComponent(at);
    for (const path of [
      "/api/conversations?limit=0",
      "/api/conversations?limit=201",
      "/api/conversations?limit=2.5",
      "/api/conversations?limit=three",
      "/api/conversations?limit=3&extra=1",
      "/api/conversations/list",
      `/api/conversations/list?at=${iso}&id=1`,
      "/api/conversations/list?at=yesterday&id=1&limit=3",
      "/api/conversations/list?at=2026-02-31T00:00:00.000Z&id=1&limit=3",
      `/api/conversations/list?at=${iso}&id=0&limit=3`,
      `/api/conversations/list?at=${iso}&id=1&limit=500`,
      `/api/conversations/list?at=${iso}&id=1&limit=3&extra=1`,
      // Numbers in plain digits only, each parameter once.
      "/api/conversations?limit=0x10",
      "/api/conversations?limit=1e2",
      "/api/conversations?limit=%203",
      "/api/conversations?limit=+3",
      "/api/conversations?limit=",
      "/api/conversations?limit=3&limit=1",
      `/api/conversations/list?at=${iso}&id=0x10&limit=3`,
      `/api/conversations/list?at=${iso}&id=1&id=2&limit=3`,
      `/api/conversations/1e0/messages`,
      `/api/conversations/1/messages?limit=05`,
    ]) {
      const res = await h.http(path, { token: a.token });
      expect([res.status, res.body.error?.code], path).toEqual([400, "invalid"]);
    }
    expect((await h.http(`/api/conversations/list?at=${iso}&id=1&limit=3`)).status).toBe(401);
    // A conversation's id in a path is read the same way: `5e0` is not conversation 5.
    const direct = (await list(a.token)).conversations[0]!;
    const deleted = await h.http(`/api/conversations/${direct.id}e0`, { method: "DELETE", token: a.token });
    expect([deleted.status, deleted.body.error?.code]).toEqual([400, "invalid"]);
    expect(await h.db.conversation.count({ where: { id: direct.id } })).toBe(1);
    // Another user's cursor shows nothing of theirs: a page lists the caller's conversations only.
    const page = await sa.emitWithAck("conversation:list", {
      before: { at: "2999-01-01T00:00:00.000Z", id: 1 },
      limit: 5,
    });
    expect(page).toMatchObject({ ok: true, more: false });
    if (page.ok) expect(page.conversations.every((c) => c.members.some((m) => m.id === a.user.id))).toBe(true);
    expect(await h.db.user.count({ where: { id: a.user.id } })).toBe(1);
  });

  it("tells a member of a changed group its counts as the list shows them: unread, mentions, muted", async () => {
    const [a, b, c] = [await user("lua"), await user("lub"), await user("luc")];
    const group = await create(a.token, [b.user.name, c.user.name]);
    const [sb, sc] = [await h.connect(b.token), await h.connect(c.token)];
    await send(sc, group.id, `hello @${b.user.name}`);
    await send(sc, group.id, "and more");
    expect(await sb.emitWithAck("conversation:mute", { conversationId: group.id, muted: true })).toMatchObject({
      ok: true,
    });

    // Each remaining member is told the group as they see it (one read of the group, one count per member).
    const updated = nextEvent(sb, "conversation:updated");
    const updatedForC = nextEvent(sc, "conversation:updated");
    const res = await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: a.token });
    expect(res.status).toBe(200);
    const { conversation } = await updated;
    expect(conversation).toMatchObject({
      unreadCount: 2,
      mentionCount: 1,
      muted: true,
      title: `Group with ${c.user.name}`,
    });
    const listed = (await list(b.token)).conversations.find((conv) => conv.id === group.id);
    expect(conversation).toEqual(listed);
    const forC = (await updatedForC).conversation;
    expect(forC).toMatchObject({ unreadCount: 0, mentionCount: 0, muted: false, title: `Group with ${b.user.name}` });
    expect(forC).toEqual((await list(c.token)).conversations.find((conv) => conv.id === group.id));
  });

  it("never answers totals its rows do not add up to: a count for a conversation the user has left goes first, or the sync fails", async () => {
    const [a, b, c] = [await user("loa"), await user("lob"), await user("loc")];
    const group = await create(a.token, [b.user.name, c.user.name]);
    const direct = await create(a.token, [b.user.name]);
    const sa = await h.connect(a.token);
    await send(sa, group.id, "one");
    await send(sa, direct.id, "two");
    // b leaves the group in the database only, as if the leave's Redis step had not run yet.
    await h.db.membership.delete({ where: { userId_conversationId: { userId: b.user.id, conversationId: group.id } } });
    const unread = createUnreadService({ redis: h.redis, db: h.db });
    expect((await unread.snapshot(b.user.id)).totalUnread).toBe(2);

    // A removal that does not take (Redis keeps counting the group): no snapshot whose badge is not its rows' sum.
    const stuck = createSnapshotService({ db: h.db, unread: { ...unread, remove: async () => null } });
    await expect(stuck.snapshot(b.user)).rejects.toThrow(/still counts conversations/);

    // Paged, the same check: the group is on no page, and still its count goes.
    await h.db.membership.delete({ where: { userId_conversationId: { userId: c.user.id, conversationId: group.id } } });
    expect((await unread.snapshot(c.user.id)).totalUnread).toBe(1);
    const page = await createSnapshotService({ db: h.db, unread }).snapshot(c.user, { limit: 1 });
    expect(page).toMatchObject({ conversations: [], more: false, unread: [], totalUnread: 0 });

    const snapshot = await createSnapshotService({ db: h.db, unread }).snapshot(b.user);
    expect(snapshot.conversations.map((conv) => [conv.id, conv.unreadCount])).toEqual([[direct.id, 1]]);
    expect(snapshot.totalUnread).toBe(1);
  });

  it("reads Redis and the database side by side, and keeps that answer only when nothing it counts moved in between", async () => {
    const [a, b, c] = [await user("lsa"), await user("lsb"), await user("lsc")];
    const direct = await create(a.token, [b.user.name]);
    const sa = await h.connect(a.token);
    await send(sa, direct.id, "one");
    const unread = createUnreadService({ redis: h.redis, db: h.db });
    const pool = poolOf(h.db);
    const orders: string[] = [];
    const moved = async (version: number) => {
      while ((await unread.stamp(b.user.id))!.version === version) await new Promise((r) => setTimeout(r, 5));
    };
    /**
     * A snapshot service whose first Redis read comes only after its database read finished and `change` ran: the
     * order the side-by-side read allows and the sequential one does not.
     */
    let redisReads = 0;
    const racing = (change: () => Promise<void>) => {
      let first = true;
      redisReads = 0;
      return createSnapshotService({
        db: h.db,
        onRead: (order) => orders.push(order),
        unread: {
          ...unread,
          async snapshot(userId: number) {
            redisReads++;
            if (first) {
              first = false;
              await new Promise((released) => pool.once("release", released));
              await change();
            }
            return unread.snapshot(userId);
          },
        },
      });
    };

    // Nothing moves: the side-by-side answer is kept, and it is the sequential one.
    const still = await createSnapshotService({ db: h.db, unread, onRead: (order) => orders.push(order) }).snapshot(
      b.user,
    );
    const sequential = await createSnapshotService({
      db: h.db,
      unread: { ...unread, stamp: async () => null },
    }).snapshot(b.user);
    expect(still).toEqual(sequential);
    expect(still.conversations.map((c) => [c.id, c.unreadCount, c.lastSeq])).toEqual([[direct.id, 1, 1]]);
    expect(orders).toEqual(["side_by_side"]);

    // A message counted after the database was read: its row would show a count its newest message is older than.
    // The counts' version moved, so the sequential read answers, with the message.
    const v1 = still.version;
    const afterMessage = await racing(async () => {
      await send(sa, direct.id, "two");
      await moved(v1);
    }).snapshot(b.user);
    expect(afterMessage.conversations).toMatchObject([
      { id: direct.id, unreadCount: 2, lastSeq: 2, lastMessage: { content: "two" } },
    ]);
    expect(afterMessage.totalUnread).toBe(2);
    expect(orders).toEqual(["side_by_side", "sequential"]);
    // The counts read beside the database were read before the second database read: they are not read again.
    expect(redisReads).toBe(1);

    // A conversation created after the database was read: a count the list does not have. The sequential read
    // lists it; its count is kept, not taken for a conversation the user left.
    let group: ConversationDTO | undefined;
    const afterCreate = await racing(async () => {
      group = await create(a.token, [b.user.name, c.user.name], "late");
      await send(sa, group.id, "late one");
      await moved(afterMessage.version);
    }).snapshot(b.user, { limit: 1 });
    expect(afterCreate.conversations.map((c) => [c.id, c.unreadCount])).toEqual([[group!.id, 1]]);
    expect(afterCreate).toMatchObject({ more: true, totalUnread: 3 });
    expect(afterCreate.unread.map(([id, count]) => [id, count]).sort()).toEqual(
      [
        [direct.id, 2],
        [group!.id, 1],
      ].sort(),
    );
    expect((await unread.snapshot(b.user.id)).counts.get(group!.id)?.unreadCount).toBe(1);
    expect(orders).toEqual(["side_by_side", "sequential", "sequential"]);
  });

  it("views one conversation's counts without resyncing anyone, and after Redis lost the user's state rebuilds it and resyncs their tabs once", async () => {
    const [a, b] = [await user("lva"), await user("lvb")];
    const direct = await create(a.token, [b.user.name]);
    const sa = await h.connect(a.token);
    await send(sa, direct.id, `@${b.user.name} one`);
    await send(sa, direct.id, "two");
    const resynced: number[] = [];
    const unread = createUnreadService({ redis: h.redis, db: h.db, onResync: (userId) => resynced.push(userId) });
    const expected = { unreadCount: 2, mentionCount: 1, muted: false, markedUnread: false, markVersion: 0 };

    expect(await unread.view(b.user.id, direct.id)).toEqual(expected);
    expect(await unread.view(a.user.id, direct.id)).toEqual({ ...expected, unreadCount: 0, mentionCount: 0 });
    expect(resynced).toEqual([]);
    const before = await unread.snapshot(b.user.id);
    expect(await unread.view(b.user.id, direct.id)).toEqual(before.counts.get(direct.id));
    expect((await unread.snapshot(b.user.id)).version).toBe(before.version); // a view moves nothing

    await h.redis.del(...Object.values(userKeys(b.user.id)));
    expect(await unread.view(b.user.id, direct.id)).toEqual(expected);
    expect(resynced).toEqual([b.user.id]);
    expect(await unread.view(b.user.id, direct.id)).toEqual(expected);
    expect(resynced).toEqual([b.user.id]);
  });
});
