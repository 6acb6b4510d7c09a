import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nextEvent, startHarness, type Harness } from "../testing/harness.ts";
import { testApi } from "../testing/api.ts";
import { userKeys } from "../redis/keys.ts";
import pg from "pg";
import { createDb, poolOf } from "../db/prisma.ts";
import { createSnapshotService } from "./snapshot.service.ts";
import { createUnreadService } from "./unread.service.ts";

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

    const listed = (await list(a.token)).conversations;
    expect(listed.map((conv) => conv.id)).toEqual([tied.id, older.id, answered.id, quiet.id]);
    expect(listed.map((conv) => [conv.createdAt, conv.lastMessage?.createdAt ?? null])).toEqual([
      [at(5000).toISOString(), null],
      [at(0).toISOString(), at(5000).toISOString()],
      [at(1000).toISOString(), at(4007).toISOString()],
      [at(3120).toISOString(), null],
    ]);
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
    expect(conversation).toMatchObject({ unreadCount: 2, mentionCount: 1, muted: true, title: c.user.name });
    const listed = (await list(b.token)).conversations.find((conv) => conv.id === group.id);
    expect(conversation).toEqual(listed);
    const forC = (await updatedForC).conversation;
    expect(forC).toMatchObject({ unreadCount: 0, mentionCount: 0, muted: false, title: b.user.name });
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

    const snapshot = await createSnapshotService({ db: h.db, unread }).snapshot(b.user);
    expect(snapshot.conversations.map((conv) => [conv.id, conv.unreadCount])).toEqual([[direct.id, 1]]);
    expect(snapshot.totalUnread).toBe(1);
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
