import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { poolOf } from "../db/prisma.ts";
import { createRedis } from "../redis/client.ts";
import { userKeys } from "../redis/keys.ts";
import { patchRecord, recordOf } from "../testing/redis.ts";
import { nextEvent, startHarness, type Harness } from "../testing/harness.ts";
import { testApi } from "../testing/api.ts";
import { messageEvents } from "../messages/fanout.ts";
import { periodicReconcile, reconcile } from "./reconcile.ts";
import { createUnreadService, DEPARTURE_MEMORY_MS } from "./unread.service.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness(2);
});
afterAll(() => h.close());

const { user, create, send, list } = testApi(() => h);

describe("leaving a group and deleting a conversation", () => {
  it("leaving takes the group's unread out of the total in the same step and ignores its later messages", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name, cat.user.name], "Leavers");
    const direct = await create(ann.token, [ben.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    for (let i = 0; i < 3; i++) await send(annSocket, group.id);
    await send(annSocket, direct.id);
    const benTab = await h.connect(ben.token, 1);
    const catTab = await h.connect(cat.token, 0);
    expect((await list(ben.token)).totalUnread).toBe(4);

    const updated = nextEvent(catTab, "conversation:updated");
    const changed = nextEvent(benTab, "unread:changed");
    const removed = nextEvent(benTab, "conversation:removed");
    const res = await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: ben.token });
    expect(res).toEqual({ status: 200, body: { ok: true } });
    expect(await changed).toMatchObject({ conversationId: group.id, unreadCount: 0, totalUnread: 1 });
    expect(await removed).toEqual({ conversationId: group.id, how: { reason: "left" } });
    const { conversation } = await updated;
    expect(conversation.members.map((m) => m.name).sort()).toEqual([ann.user.name, cat.user.name].sort());
    expect(conversation).toMatchObject({ id: group.id, title: "Leavers", unreadCount: 3 });

    await send(annSocket, group.id, "after ben left");
    const after = await list(ben.token);
    expect(after.totalUnread).toBe(1);
    expect(after.conversations.map((c) => c.id)).toEqual([direct.id]);
    expect((await list(cat.token)).totalUnread).toBe(4);
    const history = await h.http(`/api/conversations/${group.id}/messages`, { token: ben.token });
    expect(history.status).toBe(403);
  });

  it("a direct conversation cannot be left; only a group's creator may delete it; deleting removes it for all", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name, cat.user.name]);
    const direct = await create(ann.token, [ben.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    await send(annSocket, group.id);
    await send(annSocket, direct.id);

    const leaveDirect = await h.http(`/api/conversations/${direct.id}/leave`, { method: "POST", token: ben.token });
    expect(leaveDirect.body.error.code).toBe("invalid");
    const notCreator = await h.http(`/api/conversations/${group.id}`, { method: "DELETE", token: ben.token });
    expect(notCreator.body.error.code).toBe("forbidden");
    const stranger = await h.http(`/api/conversations/${direct.id}`, { method: "DELETE", token: cat.token });
    expect(stranger.body.error.code).toBe("forbidden");
    expect((await list(ben.token)).totalUnread).toBe(2);
    // What each member's list says they may delete agrees with those answers.
    const canDelete = async (token: string) =>
      Object.fromEntries((await list(token)).conversations.map((c) => [c.id, c.canDelete]));
    expect(await canDelete(ann.token)).toEqual({ [group.id]: true, [direct.id]: true });
    expect(await canDelete(ben.token)).toEqual({ [group.id]: false, [direct.id]: true });
    expect(await canDelete(cat.token)).toEqual({ [group.id]: false });

    // Each member's tabs are told who deleted it.
    const catTab = await h.connect(cat.token, 1);
    const removedForCat = nextEvent(catTab, "conversation:removed");
    const removedForAnn = nextEvent(annSocket, "conversation:removed");
    expect((await h.http(`/api/conversations/${direct.id}`, { method: "DELETE", token: ben.token })).status).toBe(200);
    expect(await removedForAnn).toEqual({ conversationId: direct.id, how: { reason: "deleted", by: ben.user.id } });
    expect((await h.http(`/api/conversations/${group.id}`, { method: "DELETE", token: ann.token })).status).toBe(200);
    expect(await removedForCat).toEqual({ conversationId: group.id, how: { reason: "deleted", by: ann.user.id } });
    for (const who of [ann, ben, cat])
      expect(await list(who.token)).toMatchObject({ totalUnread: 0, conversations: [] });
    expect(await h.db.message.count({ where: { conversationId: { in: [group.id, direct.id] } } })).toBe(0);
    // Completions run in the background, batched (server/outbox/outbox.ts).
    await expect.poll(() => h.db.outboxEvent.count()).toBe(0);
  });
  it("a direct conversation hidden from a member is deleted without telling them, nor who deleted it", async () => {
    const [mal, ann] = [await user("mal"), await user("ann")];
    const hidden = await create(mal.token, [ann.user.name]); // no message: not in ann's list
    expect((await list(ann.token)).conversations).toEqual([]);
    const annTab = await h.connect(ann.token, 0);
    const removals: unknown[] = [];
    annTab.on("conversation:removed", (removal) => removals.push(removal));
    expect((await h.http(`/api/conversations/${hidden.id}`, { method: "DELETE", token: mal.token })).status).toBe(200);
    // A push that comes after the deletion's, from the same instance: the deletion's would have come first.
    const later = nextEvent(annTab, "message:new");
    const group = await create(mal.token, [ann.user.name], "After");
    await send(await h.connect(mal.token, 0), group.id, "hello");
    await later;
    expect(removals).toEqual([]);
  });

  it("a late event for a group the user left, arriving after Redis lost their state, does not bring it back", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name, cat.user.name], "Gone");
    const direct = await create(ann.token, [ben.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    await send(annSocket, group.id);
    await send(annSocket, direct.id);
    expect((await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: ben.token })).status).toBe(
      200,
    );
    // Redis loses ben's state (a FLUSHALL, a restart without persistence), "gone" mark included; then the group's
    // message reaches his counters late, as a fan-out computed before he left would.
    await h.redis.del(...Object.values(userKeys(ben.user.id)));
    const unread = createUnreadService({ redis: h.redis, db: h.db });
    const applied = await unread.applyOne({ userId: ben.user.id, conversationId: group.id, seenSeq: 1, readSeq: 0 });

    expect(applied.update).toMatchObject({ conversationId: group.id, unreadCount: 0, totalUnread: 1 });
    expect(await h.redis.hexists(userKeys(ben.user.id).convs, String(group.id))).toBe(0);
    expect(await recordOf(h.redis, ben.user.id, direct.id)).toMatchObject({ unread: 1 });
    expect(await list(ben.token)).toMatchObject({ totalUnread: 1, conversations: [{ id: direct.id }] });
    expect(await reconcile({ db: h.db, unread }, { settleMs: 20 })).toMatchObject({ drifted: 0 });
  });

  it("a late event for a group the user left, arriving after Redis lost their state and a sync rebuilt it, does not bring it back", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name, cat.user.name], "Gone");
    const deleted = await create(ann.token, [ben.user.name, cat.user.name], "Deleted");
    const direct = await create(ann.token, [ben.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    for (const c of [group, deleted, direct]) await send(annSocket, c.id);
    expect((await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: ben.token })).status).toBe(
      200,
    );
    expect((await h.http(`/api/conversations/${deleted.id}`, { method: "DELETE", token: ann.token })).status).toBe(200);
    // Redis loses ben's state, remove.lua's "gone" marks with it; his next sync rebuilds it from the database
    // before the late events (fan-outs computed before he left, waiting through the outage) reach his counters.
    await h.redis.del(...Object.values(userKeys(ben.user.id)));
    expect(await list(ben.token)).toMatchObject({ totalUnread: 1, conversations: [{ id: direct.id }] });
    const unread = createUnreadService({ redis: h.redis, db: h.db });
    for (const c of [group, deleted]) {
      const applied = await unread.applyOne({ userId: ben.user.id, conversationId: c.id, seenSeq: 2, readSeq: 0 });
      expect(applied).toMatchObject({ changed: false, update: { unreadCount: 0, totalUnread: 1 } });
    }
    const keys = userKeys(ben.user.id);
    for (const c of [group, deleted]) {
      expect(await h.redis.hexists(keys.convs, String(c.id))).toBe(0);
      expect(await h.redis.hexists(keys.gone, String(c.id))).toBe(1);
    }
    expect(await reconcile({ db: h.db, unread }, { settleMs: 20 })).toMatchObject({ drifted: 0 });
  });

  it("forgets departures once no late event can come for them", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name, cat.user.name], "Old");
    expect((await h.http(`/api/conversations/${group.id}/leave`, { method: "POST", token: ben.token })).status).toBe(
      200,
    );
    const where = { userId: ben.user.id, conversationId: group.id };
    expect(await h.db.departure.count({ where })).toBe(1);
    const unread = createUnreadService({ redis: h.redis, db: h.db });
    expect((await reconcile({ db: h.db, unread }, { settleMs: 20 })).departuresForgotten).toBe(0);
    await h.db.departure.update({
      where: { userId_conversationId: where },
      data: { at: new Date(Date.now() - DEPARTURE_MEMORY_MS - 1000) },
    });
    expect((await reconcile({ db: h.db, unread }, { settleMs: 20 })).departuresForgotten).toBeGreaterThanOrEqual(1);
    expect(await h.db.departure.count({ where })).toBe(0);
  });
});

describe("a stored sum that drifted", () => {
  it("reaches pushes as it is until a sync repairs it: counted, in a new epoch, and the user's other tabs resync", async () => {
    const [ann, ben] = [await user("ann"), await user("ben")];
    const direct = await create(ann.token, [ben.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    await send(annSocket, direct.id);
    const before = await list(ben.token);
    expect(before.totalUnread).toBe(1);
    const meta = userKeys(ben.user.id).meta;
    await h.redis.hincrby(meta, "total", 5); // drift from outside the scripts
    const [tab, other] = [await h.connect(ben.token, 0), await h.connect(ben.token, 1)];

    // apply.lua never sums: the next push carries the drift as it found it, in the same epoch.
    const pushed = nextEvent(other, "unread:changed");
    await send(annSocket, direct.id);
    expect(await pushed).toMatchObject({ unreadCount: 2, totalUnread: 7, epoch: before.epoch });

    const stale = nextEvent(other, "unread:stale");
    const synced = await tab.emitWithAck("sync");
    if (!synced.ok) throw new Error(synced.error.message);
    expect(synced.snapshot).toMatchObject({ totalUnread: 2, version: 1 });
    expect(synced.snapshot.epoch).not.toBe(before.epoch);
    await stale;
    expect(await h.redis.hmget(meta, "total", "repairs")).toEqual(["2", "1"]);
    // Repaired for good: the next push continues the new epoch from the right total.
    const next = nextEvent(other, "unread:changed");
    await send(annSocket, direct.id);
    expect(await next).toMatchObject({ totalUnread: 3, version: 2, epoch: synced.snapshot.epoch });
    const unread = createUnreadService({ redis: h.redis, db: h.db });
    expect(await reconcile({ db: h.db, unread }, { settleMs: 20 })).toMatchObject({ drifted: 0 });
  });
});

describe("a snapshot without expiry", () => {
  it("reads the records in the instance, not through snapshot.lua, and repairs drift and lost state as the script would; with expiry on the script answers", async () => {
    const [ann, ben] = [await user("ann"), await user("ben")];
    const direct = await create(ann.token, [ben.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    await send(annSocket, direct.id, `@${ben.user.name} hi`);
    await send(annSocket, direct.id);
    // A client of its own, whose snapshot.lua calls are counted (the scripts are ioredis commands on the client).
    const redis = createRedis(inject("redisTarget"));
    let scriptCalls = 0;
    const script = redis.tallySnapshotExpiring.bind(redis);
    redis.tallySnapshotExpiring = (...args: Parameters<typeof script>) => {
      scriptCalls++;
      return script(...args);
    };
    try {
      const resynced: number[] = [];
      const unread = createUnreadService({ redis, db: h.db, onResync: (id) => resynced.push(id) });
      const expected = { unreadCount: 2, mentionCount: 1, muted: false, markedUnread: false, markVersion: 0 };
      const first = await unread.snapshot(ben.user.id);
      expect(first).toMatchObject({ totalUnread: 2, totalMentions: 1 });
      expect(first.counts.get(direct.id)).toEqual(expected);

      await patchRecord(h.redis, ben.user.id, direct.id, { unread: 7 }); // a record that drifted from its sum
      const repaired = await unread.snapshot(ben.user.id);
      expect(repaired).toMatchObject({ totalUnread: 2, totalMentions: 1, version: 1 });
      expect(repaired.epoch).not.toBe(first.epoch);
      expect(resynced).toEqual([ben.user.id]);
      expect(await h.redis.hget(userKeys(ben.user.id).meta, "repairs")).toBe("1");

      await h.redis.del(...Object.values(userKeys(ben.user.id))); // Redis lost the user's state
      const rebuilt = await unread.snapshot(ben.user.id);
      expect(rebuilt.counts.get(direct.id)).toEqual(expected);
      expect(scriptCalls).toBe(0);

      // State stamped by another term (a promoted replica's copy): only the script may judge it, and it is rebuilt.
      const meta = userKeys(ben.user.id).meta;
      const stamp = await h.redis.hget(meta, "term");
      await h.redis.hset(meta, "term", "another-term");
      const fenced = await unread.snapshot(ben.user.id);
      expect(fenced.counts.get(direct.id)).toEqual(expected);
      expect(fenced.epoch).not.toBe(rebuilt.epoch);
      expect(await h.redis.hget(meta, "term")).toBe(stamp);
      expect(scriptCalls).toBe(1);
      scriptCalls = 0;

      const expiring = createUnreadService({ redis, db: h.db, ttlMs: 86_400_000 });
      expect((await expiring.snapshot(ben.user.id)).counts.get(direct.id)).toEqual(expected);
      expect(scriptCalls).toBe(1);
    } finally {
      await redis.quit();
    }
  });
});

describe("reconciliation", () => {
  it("finds and repairs drift of every kind, and leaves healthy users alone", async () => {
    const [ann, ben, cat, dan] = [await user("ann"), await user("ben"), await user("cat"), await user("dan")];
    const c1 = await create(ann.token, [ben.user.name]);
    const c2 = await create(ann.token, [ben.user.name, cat.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    for (let i = 0; i < 3; i++) await send(annSocket, c1.id);
    for (let i = 0; i < 2; i++) await send(annSocket, c2.id);
    for (const who of [ben, cat, dan]) await list(who.token); // their counters exist in Redis

    await patchRecord(h.redis, ben.user.id, c1.id, { unread: 1 }); // a lost increment: conversation says 1, truth is 3
    await patchRecord(h.redis, cat.user.id, c2.id, { seen: 50, unread: 48 }); // a register above the database
    await h.redis.hset(userKeys(cat.user.id).meta, "total", 48);
    const benTab = await h.connect(ben.token, 1);
    const stale = nextEvent(benTab, "unread:stale");

    const unread = createUnreadService({ redis: h.redis, db: h.db });
    const notifier = h.instances[0]!.app.notifier;
    const report = await reconcile(
      { db: h.db, unread, onRepaired: (ids) => notifier.unreadStale(ids) },
      { settleMs: 20 },
    );
    expect(report).toMatchObject({ drifted: 2, repaired: 2 });
    expect(report.examples.map((e) => e.userId).sort()).toEqual([ben.user.id, cat.user.id].sort());
    await stale;

    expect(await list(ben.token)).toMatchObject({ totalUnread: 5 });
    expect(await list(cat.token)).toMatchObject({ totalUnread: 2 });
    const again = await reconcile({ db: h.db, unread }, { settleMs: 20 });
    expect(again).toMatchObject({ drifted: 0, repaired: 0 });
    expect(again.usersChecked).toBeGreaterThanOrEqual(4);
  });
  it("leaves a user alone whose Redis is one message behind at each look, and repairs one stuck behind", async () => {
    const [ann, ben] = [await user("ann"), await user("ben")];
    const direct = await create(ann.token, [ben.user.name]);
    await send(await h.connect(ann.token, 0), direct.id);
    expect((await list(ben.token)).totalUnread).toBe(1);
    // A message committed whose apply has not run yet: Redis one behind the database.
    const commitUnapplied = async (seq: number) => {
      await h.db.$executeRawUnsafe(
        `INSERT INTO "Message" ("conversationId", "seq", "senderId", "clientMsgId", "content") VALUES ($1, $2, $3, $4, 'hi')`,
        direct.id,
        seq,
        ann.user.id,
        `behind-${direct.id}-${seq}`,
      );
      await h.db.$executeRawUnsafe(`UPDATE "Conversation" SET "lastSeq" = $1 WHERE "id" = $2`, seq, direct.id);
    };
    const rebuilds = { read: 0, joined: 0 };
    const unread = createUnreadService({ redis: h.redis, db: h.db, onRebuild: (how) => rebuilds[how]++ });

    // A steady sender: between the two looks the message of the first is applied and the next one commits.
    await commitUnapplied(2);
    const steady = await reconcile(
      { db: h.db, unread },
      {
        settle: async () => {
          await unread.applyOne({ userId: ben.user.id, conversationId: direct.id, seenSeq: 2, readSeq: 0 });
          await commitUnapplied(3);
        },
      },
    );
    expect(steady).toMatchObject({ drifted: 0, repaired: 0 });
    expect(rebuilds.read).toBe(0);

    // The apply of message 3 never comes: still behind where the first look read the database, so it is drift.
    const stuck = await reconcile({ db: h.db, unread }, { settleMs: 20 });
    expect(stuck).toMatchObject({ drifted: 1, repaired: 1 });
    expect(stuck.examples).toEqual([
      { userId: ben.user.id, problems: [`conversation ${direct.id}: unread 2, database says 3`] },
    ]);
    expect((await list(ben.token)).totalUnread).toBe(3);
  });

  it("runs one periodic pass an interval over all instances, and never two at once on one", async () => {
    const key = `reconcile-turn-${Date.now()}`;
    let release = () => {};
    const passes: string[] = [];
    const instance = (name: string) =>
      periodicReconcile({
        redis: h.redis,
        intervalMs: 600_000,
        key,
        pass: () => {
          passes.push(name);
          return new Promise<void>((r) => (release = r));
        },
      });
    const [a, b] = [instance("a"), instance("b")];
    const first = a.tick();
    await vi.waitFor(() => expect(passes).toEqual(["a"]));
    expect(await a.tick()).toBe("running"); // a's pass outlived its interval
    expect(await b.tick()).toBe("taken"); // a holds this interval's turn
    release();
    expect(await first).toBe("ran");
    expect(await b.tick()).toBe("taken");
    expect(await h.redis.pttl(key)).toBeGreaterThan(0);
    await h.redis.del(key); // the lease ends: the next interval's turn goes to whoever ticks first
    const second = b.tick();
    await vi.waitFor(() => expect(passes).toEqual(["a", "b"]));
    release();
    expect(await second).toBe("ran");
    await h.redis.del(key);
  });

  it("renews a long pass's lease while the turn is still its own, and never one another instance took", async () => {
    // Only the renewal's interval is faked; ioredis sends commands of one connection in order, so a command sent
    // after the timer fired is answered after the renewal it sent.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      const key = `reconcile-renew-${Date.now()}`;
      const lease = 540_000; // 90% of the interval; renewed every third of it
      let release = () => {};
      const running = periodicReconcile({
        redis: h.redis,
        intervalMs: 600_000,
        key,
        pass: () => new Promise<void>((r) => (release = r)),
      });
      const ran = running.tick();
      await vi.waitFor(async () => expect(await h.redis.exists(key)).toBe(1));
      const token = await h.redis.get(key);

      await h.redis.pexpire(key, 1000); // the lease nearly run out, the pass still going
      vi.advanceTimersByTime(lease / 3);
      expect(await h.redis.pttl(key)).toBeGreaterThan(lease - 60_000);
      expect(await h.redis.get(key)).toBe(token);

      await h.redis.set(key, "another-instance", "PX", 5000); // its lease ran out and another instance took the turn
      vi.advanceTimersByTime(lease / 3);
      expect(await h.redis.get(key)).toBe("another-instance");
      expect(await h.redis.pttl(key)).toBeLessThanOrEqual(5000);

      release();
      expect(await ran).toBe("ran");
      await h.redis.set(key, token!, "PX", 1000); // were the renewal still running, it would extend this
      vi.advanceTimersByTime(lease);
      expect(await h.redis.pttl(key)).toBeLessThanOrEqual(1000);
      await h.redis.del(key);
    } finally {
      vi.useRealTimers();
    }
  });

  it("a read and a send of the same member see each other, whichever holds the membership's lock first", async () => {
    const pool = poolOf(h.db);
    const waiting = async () =>
      Number(
        (
          await pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          )
        ).rows[0]!.n,
      );
    for (const first of ["send", "read"] as const) {
      const [ann, ben] = [await user("ann"), await user("ben")];
      // Ben's, who writes first in it.
      const c = await create(ben.token, [ann.user.name]);
      const annSocket = await h.connect(ann.token, 0);
      const benSocket = await h.connect(ben.token, 1);
      await send(benSocket, c.id);
      await send(benSocket, c.id); // ann: 1 and 2 unread, her cursor at 0
      const holder = await pool.connect();
      try {
        await holder.query("BEGIN");
        let other: Promise<unknown>;
        if (first === "send") {
          // Ann's message 3, stored and not yet committed: her cursor (0) is not right below it, so it stays.
          await holder.query(
            `SELECT * FROM tally_store_messages(ARRAY[$1]::int[], ARRAY[$2]::int[], ARRAY['held-send']::text[], ARRAY['mine']::text[], ARRAY[]::int[])`,
            [c.id, ann.user.id],
          );
          // Her read of 2 waits for that commit, then sees message 3 and moves over it.
          other = annSocket.emitWithAck("conversation:read", { conversationId: c.id, seq: 2 });
        } else {
          // Her read of 2, not yet committed; her send of 3 waits for it, then finds the cursor right below it.
          await holder.query(`SELECT * FROM tally_read_cursor($1, $2, 2, NULL)`, [ann.user.id, c.id]);
          other = send(annSocket, c.id);
        }
        await expect.poll(waiting, { message: `the ${first === "send" ? "read" : "send"} waits for the lock` }).toBe(1);
        await holder.query("COMMIT");
        await other;
      } finally {
        holder.release();
      }
      const where = { userId_conversationId: { userId: ann.user.id, conversationId: c.id } };
      expect((await h.db.membership.findUniqueOrThrow({ where })).lastReadSeq, `${first} first`).toBe(3);
    }
    // What the held transaction stored reaches Redis through the outbox relay.
    await expect.poll(() => h.db.outboxEvent.count(), { timeout: 30_000 }).toBe(0);
    expect(await reconcile({ db: h.db, unread: createUnreadService({ redis: h.redis, db: h.db }) })).toMatchObject({
      drifted: 0,
    });
  });

  it("takes a database cursor left right below an own message as moved over it", async () => {
    const [ann, ben] = [await user("ann"), await user("ben")];
    const c = await create(ann.token, [ben.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    const benSocket = await h.connect(ben.token, 1);
    await send(annSocket, c.id); // 1: ann's
    await send(benSocket, c.id); // 2: ben's, above ann's unread 1
    await send(annSocket, c.id); // 3: ann's, above ben's 2, which she has not read
    expect((await list(ann.token)).totalUnread).toBe(1);
    // Ann reads 2: her cursor moves over her own 3. Write what a read racing her send left before the two took the
    // membership's lock (20261204010000_read_cursor_lock), or a manual edit, into the database: cursor 2.
    expect(await annSocket.emitWithAck("conversation:read", { conversationId: c.id, seq: 2 })).toMatchObject({
      ok: true,
      unread: { unreadCount: 0 },
    });
    const where = { userId_conversationId: { userId: ann.user.id, conversationId: c.id } };
    expect((await h.db.membership.findUniqueOrThrow({ where })).lastReadSeq).toBe(3);
    await h.db.membership.update({ where, data: { lastReadSeq: 2 } });

    const unread = createUnreadService({ redis: h.redis, db: h.db });
    expect((await unread.truth(ann.user.id)).find((t) => t.conversationId === c.id)).toMatchObject({
      lastReadSeq: 3,
      ownSeqs: [],
    });
    expect(await reconcile({ db: h.db, unread }, { settleMs: 20 })).toMatchObject({ drifted: 0 });
    // A rebuild from that database state ends where the live events did.
    const live = await recordOf(h.redis, ann.user.id, c.id);
    await h.redis.del(...Object.values(userKeys(ann.user.id)));
    expect((await list(ann.token)).totalUnread).toBe(0);
    expect(await recordOf(h.redis, ann.user.id, c.id)).toEqual(live);
  });

  it("finds and repairs drift in a mention count and in the mute register; a muted conversation is not drift", async () => {
    const [ann, ben, cat, dan, eve] = [
      await user("ann"),
      await user("ben"),
      await user("cat"),
      await user("dan"),
      await user("eve"),
    ];
    const group = await create(ann.token, [ben.user.name, cat.user.name, dan.user.name, eve.user.name], "Muted");
    const annSocket = await h.connect(ann.token, 0);
    await send(annSocket, group.id, `@${ben.user.name} hi`);
    await send(annSocket, group.id, "and more");
    for (const who of [dan, eve]) {
      const tab = await h.connect(who.token, 1);
      const res = await tab.emitWithAck("conversation:mute", { conversationId: group.id, muted: true });
      expect(res).toMatchObject({ ok: true, unread: { unreadCount: 2, muted: true, totalUnread: 0 } });
    }
    for (const who of [ben, cat]) await list(who.token); // their counters exist in Redis

    const unread = createUnreadService({ redis: h.redis, db: h.db });
    expect(await reconcile({ db: h.db, unread }, { settleMs: 20 })).toMatchObject({ drifted: 0 });

    const conv = String(group.id);
    await patchRecord(h.redis, ben.user.id, conv, { mentions: 3 }); // a mention count the database does not explain
    await patchRecord(h.redis, cat.user.id, conv, { muteVersion: 1, muted: 1 }); // a mute the database never made
    await patchRecord(h.redis, eve.user.id, conv, { muteVersion: 0, muted: 0 }); // a mute Redis lost
    const report = await reconcile({ db: h.db, unread }, { settleMs: 20 });
    expect(report).toMatchObject({ drifted: 3, repaired: 3 });
    const problems = new Map(report.examples.map((e) => [e.userId, e.problems.join("; ")]));
    expect([...problems.keys()].sort()).toEqual([ben.user.id, cat.user.id, eve.user.id].sort());
    expect(problems.get(ben.user.id)).toContain(`conversation ${conv}: mentions 3, database says 1`);
    expect(problems.get(cat.user.id)).toContain(`conversation ${conv}: muted 1, database says 0`);
    expect(problems.get(eve.user.id)).toContain(`conversation ${conv}: muted 0, database says 1`);

    const state = async (token: string) => {
      const s = await list(token);
      const c = s.conversations.find((x) => x.id === group.id)!;
      return [s.totalUnread, s.totalMentions, c.unreadCount, c.mentionCount, c.muted];
    };
    expect(await state(ben.token)).toEqual([2, 1, 2, 1, false]);
    expect(await state(cat.token)).toEqual([2, 0, 2, 0, false]);
    expect(await state(dan.token)).toEqual([0, 0, 2, 0, true]);
    expect(await state(eve.token)).toEqual([0, 0, 2, 0, true]);
    expect(await reconcile({ db: h.db, unread }, { settleMs: 20 })).toMatchObject({ drifted: 0, repaired: 0 });
  });
});

/**
 * A client of the test's Redis whose first rebuild.lua call for `userId` waits, the rebuild's database read made,
 * until `release()`: `atWrite` resolves when it starts waiting. Every other call goes through.
 */
function holdingRebuild(userId: number) {
  let reached!: () => void;
  const atWrite = new Promise<void>((resolve) => (reached = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const meta = userKeys(userId).meta;
  let held = false;
  const redis = new Proxy(h.redis, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name);
      if (name !== "tallyRebuild") return typeof value === "function" ? value.bind(target) : value;
      return async (...args: Parameters<typeof target.tallyRebuild>) => {
        if (!held && args[0] === meta) {
          held = true;
          reached();
          await released;
        }
        return target.tallyRebuild(...args);
      };
    },
  });
  return { redis, atWrite, release };
}

describe("a rebuild's read of the database", () => {
  it("reconciliation's replace does not undo an event applied between its read and its write", async () => {
    const [ann, ben] = [await user("ann"), await user("ben")];
    const direct = await create(ann.token, [ben.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    await send(annSocket, direct.id);
    // Redis counts a conversation ben is not in (which only a replace takes out), its sums kept in step.
    await patchRecord(h.redis, ben.user.id, 424242, { seen: 2, unread: 2 });
    const meta = userKeys(ben.user.id).meta;
    await h.redis.hincrby(meta, "total", 2);
    const { redis: gated, atWrite, release } = holdingRebuild(ben.user.id);
    const reconciling = reconcile(
      { db: h.db, unread: createUnreadService({ redis: gated, db: h.db }) },
      { settleMs: 20 },
    );
    await atWrite; // the replace read one message
    await send(annSocket, direct.id); // applied to the state the replace is about to overwrite
    expect(await h.redis.hget(meta, "total")).toBe("4");
    release();
    const report = await reconciling;
    expect(await h.redis.hget(meta, "total")).toBe("2");
    expect((await list(ben.token)).totalUnread).toBe(2);
    expect(report).toMatchObject({ drifted: 1, repaired: 1 });
    const unread = createUnreadService({ redis: h.redis, db: h.db });
    expect(await reconcile({ db: h.db, unread }, { settleMs: 20 })).toMatchObject({ drifted: 0 });
  });

  it("does not create state from a read made before Redis lost the user's keys", async () => {
    const [ann, ben] = [await user("ann"), await user("ben")];
    const direct = await create(ann.token, [ben.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    await send(annSocket, direct.id);
    const forget = () => h.redis.del(...Object.values(userKeys(ben.user.id)));
    await forget(); // Redis lost ben's state: the next rebuild reads the database
    const { redis: gated, atWrite, release } = holdingRebuild(ben.user.id);
    const stale = createUnreadService({ redis: gated, db: h.db });
    const rebuilding = stale.rebuild(ben.user.id);
    await atWrite; // its read saw one message
    // A second message: the server rebuilds ben from a later read, applies it and completes its outbox entry.
    await send(annSocket, direct.id);
    expect((await list(ben.token)).totalUnread).toBe(2);
    await forget(); // and Redis loses ben's keys again, before the first rebuild writes
    release();
    await rebuilding;
    // Written from the first read, ben's state would count one message until reconciliation: nothing replays the second.
    expect((await list(ben.token)).totalUnread).toBe(2);
    const unread = createUnreadService({ redis: h.redis, db: h.db });
    expect(await reconcile({ db: h.db, unread }, { settleMs: 20 })).toMatchObject({ drifted: 0, repaired: 0 });
  });

  it("rebuilds a user mentioned 100 000 times, and one who sent 100 000 messages, and finds no drift in them", async () => {
    // What abusers leave a victim who does not read (docs/security.md, "Mention floods"). As many (conversation, seq)
    // pairs as that once overflowed the stack when spread into one call, and gathering them was quadratic.
    const [ann, ben] = [await user("ann"), await user("ben")];
    const group = await create(ann.token, [ben.user.name], "Flood");
    const n = 100_000;
    const own = 1_000; // ben's, after ann's: above his cursor, so listed and not counted
    await h.db.$executeRawUnsafe(
      `INSERT INTO "Message" ("conversationId", "seq", "senderId", "clientMsgId", "content")
       SELECT $1, s, CASE WHEN s <= $3::int THEN $2::int ELSE $4::int END, 'flood-' || s, '@ben' FROM generate_series(1, $3::int + $5::int) s`,
      group.id,
      ann.user.id,
      n,
      ben.user.id,
      own,
    );
    await h.db.$executeRawUnsafe(
      `INSERT INTO "Mention" ("userId", "conversationId", "seq") SELECT $1, $2, s FROM generate_series(1, $3) s`,
      ben.user.id,
      group.id,
      n,
    );
    await h.db.$executeRawUnsafe(`UPDATE "Conversation" SET "lastSeq" = $1 WHERE "id" = $2`, n + own, group.id);
    await h.redis.del(...Object.values(userKeys(ben.user.id)));

    const unread = createUnreadService({ redis: h.redis, db: h.db });
    expect(await unread.rebuild(ben.user.id)).toMatchObject([expect.any(String), 1, n, "created", n]);
    expect(await h.redis.zcard(userKeys(ben.user.id).ment)).toBe(n + own);
    const snapshot = await list(ben.token);
    expect(snapshot).toMatchObject({ totalUnread: n, totalMentions: n });
    expect(snapshot.conversations.find((c) => c.id === group.id)).toMatchObject({ unreadCount: n, mentionCount: n });
    // ann sent the 100 000 behind her state's back: merged in as own messages, her cursor moves over them all.
    expect(await unread.rebuild(ann.user.id)).toMatchObject([expect.any(String), 1, own, "merged", 0]);
    expect(await list(ann.token)).toMatchObject({ totalUnread: own, totalMentions: 0 });
    expect(await reconcile({ db: h.db, unread }, { settleMs: 20 })).toMatchObject({ drifted: 0, repaired: 0 });
  });

  it("sees a message and its mention together, also when they commit between its reads", async () => {
    const [ann, ben] = [await user("ann"), await user("ben")];
    const direct = await create(ann.token, [ben.user.name]);
    await send(await h.connect(ann.token, 0), direct.id);
    const unread = createUnreadService({ redis: h.redis, db: h.db });
    const pool = poolOf(h.db);
    const locker = await pool.connect();
    try {
      // Whatever reads the conversations' lastSeq waits for this transaction; what reads only the mentions does not.
      await locker.query(`BEGIN`);
      await locker.query(`LOCK TABLE "Conversation" IN ACCESS EXCLUSIVE MODE`);
      const reading = unread.truth(ben.user.id);
      const waiting = async () =>
        Number(
          (
            await pool.query(
              `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
            )
          ).rows[0].n,
        );
      await expect.poll(waiting).toBe(1);
      // A message that mentions ben commits while the read waits (the send path writes these in one transaction).
      const { rows } = await locker.query<{ seq: number }>(
        `UPDATE "Conversation" SET "lastSeq" = "lastSeq" + 1 WHERE "id" = $1 RETURNING "lastSeq" AS "seq"`,
        [direct.id],
      );
      const seq = rows[0]!.seq;
      await locker.query(
        `INSERT INTO "Message" ("conversationId", "seq", "senderId", "clientMsgId", "content") VALUES ($1, $2, $3, $4, $5)`,
        [direct.id, seq, ann.user.id, `between-${seq}`, `@${ben.user.name}`],
      );
      await locker.query(`INSERT INTO "Mention" ("userId", "conversationId", "seq") VALUES ($1, $2, $3)`, [
        ben.user.id,
        direct.id,
        seq,
      ]);
      await locker.query(`COMMIT`);
      const truth = (await reading).find((t) => t.conversationId === direct.id)!;
      // Before the message (lastSeq below it, no mention) or after it (both): never the message without its mention.
      expect(truth.mentionSeqs.includes(seq)).toBe(truth.lastSeq >= seq);
    } finally {
      await locker.query(`ROLLBACK`).catch(() => {});
      locker.release();
    }
  });
});

describe("a burst of rebuilds", () => {
  it("a group's message reaching members whose state Redis lost rebuilds them a few at a time, each from the database", async () => {
    const members = await Promise.all(Array.from({ length: 24 }, (_, i) => user(`burst${i}`)));
    const [ann] = members;
    const group = await create(
      ann!.token,
      members.slice(1).map((m) => m.user.name),
      "Burst",
    );
    const annSocket = await h.connect(ann!.token, 0);
    const sent = await send(annSocket, group.id);
    if (!sent.ok) throw new Error(sent.error.message);
    // Redis loses every member's state; then the message's fan-out reaches their counters (the relay's replay).
    for (const m of members) await h.redis.del(...Object.values(userKeys(m.user.id)));

    // The real database, each rebuild's read (one REPEATABLE READ transaction) counted from its call until it answers.
    let reading = 0;
    let most = 0;
    let reads = 0;
    const counted = new Proxy(h.db, {
      get(target, prop) {
        if (prop !== "$transaction") return Reflect.get(target, prop) as unknown;
        return async (...args: Parameters<typeof target.$transaction>) => {
          reads++;
          most = Math.max(most, ++reading);
          try {
            return await target.$transaction(...args);
          } finally {
            reading--;
          }
        };
      },
    });
    const unread = createUnreadService({ redis: h.redis, db: counted, rebuildConcurrency: 3 });
    const applied = await unread.applyMany(
      messageEvents(
        { ...sent.message, createdAtMs: Date.parse(sent.message.createdAt) },
        members.map((m) => m.user.id),
      ),
    );

    expect(reads).toBe(members.length);
    expect(most).toBeLessThanOrEqual(3);
    for (const a of applied) {
      const own = a.userId === ann!.user.id ? 0 : 1;
      expect(a.update).toMatchObject({ conversationId: group.id, unreadCount: own, totalUnread: own });
    }
    const ids = (xs: number[]) => [...xs].sort((x, y) => x - y);
    expect(ids(applied.map((a) => a.userId))).toEqual(ids(members.map((m) => m.user.id)));
    // What each member's page loads agrees: rebuilt once, then the message applied on top, not counted twice.
    for (const m of members) expect((await list(m.token)).totalUnread).toBe(m.user.id === ann!.user.id ? 0 : 1);
  });

  it("events for one user whose state Redis lost share one read of the database, and each is applied after it", async () => {
    const [ben, ...senders] = await Promise.all(["ben", "ann", "cat", "dan", "eve"].map((name) => user(name)));
    const events = [];
    for (const sender of senders) {
      const direct = await create(sender.token, [ben!.user.name]);
      const socket = await h.connect(sender.token, 0);
      for (let i = 0; i < 2; i++) {
        const sent = await send(socket, direct.id);
        if (!sent.ok) throw new Error(sent.error.message);
        const { message } = sent;
        events.push(...messageEvents({ ...message, createdAtMs: Date.parse(message.createdAt) }, [ben!.user.id]));
      }
    }
    // Redis loses ben's state while eight events for ben are still to be applied (the relay replaying them, say).
    await h.redis.del(...Object.values(userKeys(ben!.user.id)));
    const rebuilds = { read: 0, joined: 0 };
    const unread = createUnreadService({ redis: h.redis, db: h.db, onRebuild: (how) => rebuilds[how]++ });
    const applied = await Promise.all(events.map((e) => unread.applyOne(e)));

    // Every apply found the state missing before the first rebuild could write it: one read, seven callers joined.
    expect(rebuilds).toEqual({ read: 1, joined: events.length - 1 });
    expect(applied.map((a) => a.update.totalUnread)).toEqual(events.map(() => 8));
    // What ben's page loads: each conversation's two messages, counted once.
    const page = await list(ben!.token);
    expect(page.totalUnread).toBe(8);
    expect(page.conversations.map((c) => c.unreadCount)).toEqual([2, 2, 2, 2]);
  });

  it("a caller that finds the state missing once the rebuild's write has gone out reads the database itself", async () => {
    const [ann, ben] = [await user("ann"), await user("ben")];
    const direct = await create(ann.token, [ben.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    const eventOf = async () => {
      const sent = await send(annSocket, direct.id);
      if (!sent.ok) throw new Error(sent.error.message);
      return messageEvents({ ...sent.message, createdAtMs: Date.parse(sent.message.createdAt) }, [ben.user.id])[0]!;
    };
    const first = await eventOf();
    await h.redis.del(...Object.values(userKeys(ben.user.id)));
    const { redis: gated, atWrite, release } = holdingRebuild(ben.user.id);
    const rebuilds = { read: 0, joined: 0 };
    const unread = createUnreadService({ redis: gated, db: h.db, onRebuild: (how) => rebuilds[how]++ });
    const applyingFirst = unread.applyOne(first);
    await atWrite; // the first rebuild read one message and sent its write, which Redis has not run yet
    const second = await eventOf();
    await h.redis.del(...Object.values(userKeys(ben.user.id))); // the server's own apply of it rebuilt ben: lost again
    // Joining the first rebuild would leave this caller with whatever its write finds: it reads the database itself.
    const applyingSecond = unread.applyOne(second);
    await expect.poll(() => rebuilds.read).toBe(2);
    expect(rebuilds.joined).toBe(0);
    release();
    const applied = await Promise.all([applyingFirst, applyingSecond]);
    expect(applied.map((a) => a.update.unreadCount)).toEqual([2, 2]);
    expect((await list(ben.token)).totalUnread).toBe(2);
  });

  it("a rebuild waits for a connection of a busy pool instead of failing after Prisma's default 2 s", async () => {
    const [ann, ben] = [await user("ann"), await user("ben")];
    const direct = await create(ann.token, [ben.user.name]);
    await send(await h.connect(ann.token, 0), direct.id);
    await h.redis.del(...Object.values(userKeys(ben.user.id)));
    const pool = poolOf(h.db);
    const taken = await Promise.allSettled(Array.from({ length: pool.options.max }, () => pool.connect()));
    const held = taken.flatMap((t) => (t.status === "fulfilled" ? [t.value] : []));
    let released = false;
    try {
      expect(held).toHaveLength(pool.options.max);
      // Settled at once, so that a read failing while the connections are held fails this test, not the run.
      const rebuilt = createUnreadService({ redis: h.redis, db: h.db })
        .rebuild(ben.user.id)
        .then(
          () => "rebuilt",
          (err: unknown) => `failed: ${String(err)}`,
        );
      // Every connection stays taken for longer than Prisma's default maxWait, which failed the read with P2028.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      held.forEach((client) => client.release());
      released = true;
      expect(await rebuilt).toBe("rebuilt");
    } finally {
      if (!released) held.forEach((client) => client.release());
    }
    expect(await recordOf(h.redis, ben.user.id, direct.id)).toMatchObject({ unread: 1 });
    expect((await list(ben.token)).totalUnread).toBe(1);
  });
});
