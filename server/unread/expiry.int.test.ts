import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ConversationDTO } from "../contracts/index.ts";
import { userKeys } from "../redis/keys.ts";
import { patchRecord } from "../testing/redis.ts";
import { nextEvent, startHarness, type ClientSocket, type Harness } from "../testing/harness.ts";
import { reconcile } from "./reconcile.ts";
import { createUnreadService } from "./unread.service.ts";

const TTL = 3_600_000;
// The instant both instances (and reconciliation) judge expiry at. A test moves it past a message's TTL when it
// wants that message expired: nothing waits, however slow the machine. It never goes back (reconciliation checks
// the earlier tests' users too), and never lags the wall clock at a test's start.
let clockMs = Date.now();
const clock = () => clockMs;
beforeEach(() => {
  clockMs = Math.max(clockMs, Date.now());
});
/** Moves the clock to the first instant at which messages created at or before `createdAtMs` have expired. */
const expireUpTo = (createdAtMs: number) => {
  clockMs = createdAtMs + TTL + 1;
};
/** Messages created from now on (the database's clock is the machine's) are strictly newer than `ms`. */
async function clockPassed(ms: number): Promise<void> {
  while (Date.now() <= ms) await new Promise((r) => setTimeout(r, 1));
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness(2, { unreadTtlMs: TTL, clock });
});
afterAll(() => h.close());

let n = 0;
const user = (base: string) => h.signUp(`${base}_${Date.now().toString(36)}${n++}`);

async function create(token: string, memberNames: string[]): Promise<ConversationDTO> {
  const res = await h.http("/api/conversations", { method: "POST", token, body: JSON.stringify({ memberNames }) });
  expect(res.status).toBe(200);
  return res.body.conversation as ConversationDTO;
}

/** Sends a message and returns its createdAt (ms), as the counters saw it. */
async function send(s: ClientSocket, conversationId: number): Promise<number> {
  const ack = await s.emitWithAck("message:send", { conversationId, clientMsgId: randomUUID(), content: "hi" });
  if (!ack.ok) throw new Error(ack.error.message);
  return Date.parse(ack.message.createdAt);
}

async function list(token: string) {
  const res = await h.http("/api/conversations", { token });
  const body = res.body as { conversations: ConversationDTO[]; totalUnread: number; epoch: string; version: number };
  const sum = body.conversations.reduce((s, c) => s + c.unreadCount, 0);
  expect(body.totalUnread, "total == sum of the listed conversations").toBe(sum);
  return body;
}

const reconcileNow = () =>
  reconcile(
    { db: h.db, unread: createUnreadService({ redis: h.redis, db: h.db, ttlMs: TTL, clock }) },
    { settleMs: 20 },
  );

describe("unread expiry (UNREAD_TTL_DAYS)", () => {
  it("stops counting messages older than the TTL, starts a new epoch, and reconciliation agrees", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const c1 = await create(ann.token, [ben.user.name]);
    const c2 = await create(ann.token, [ben.user.name, cat.user.name]);
    const annSocket = await h.connect(ann.token, 0);
    await send(annSocket, c1.id);
    await send(annSocket, c1.id);
    const last = await send(annSocket, c2.id);
    const before = await list(ben.token);
    expect(before.totalUnread).toBe(3);
    expect(await reconcileNow()).toMatchObject({ drifted: 0 });

    expireUpTo(last);
    const benTab = await h.connect(ben.token, 1);
    const stale = nextEvent(benTab, "unread:stale");
    const after = await list(ben.token);
    expect(after).toMatchObject({ totalUnread: 0, version: 1 });
    expect(after.epoch).not.toBe(before.epoch);
    await stale; // tabs holding the old epoch resync

    // A new message counts; the expired ones stay expired.
    const changed = nextEvent(benTab, "unread:changed");
    await clockPassed(last);
    const fresh = await send(annSocket, c1.id);
    expect(await changed).toMatchObject({ conversationId: c1.id, unreadCount: 1, totalUnread: 1 });
    expect(await reconcileNow()).toMatchObject({ drifted: 0 });

    // Redis loses the user's state: the rebuild from the database reaches the same counts.
    const k = userKeys(ben.user.id);
    await h.redis.del(...Object.values(k));
    expect(await list(ben.token)).toMatchObject({ totalUnread: 1 });
    expect(await reconcileNow()).toMatchObject({ drifted: 0 });

    // At the next apply, the expiry of c1's message in another conversation's event starts a new epoch.
    expireUpTo(fresh);
    const pushed = nextEvent(benTab, "unread:changed");
    await clockPassed(fresh);
    await send(annSocket, c2.id);
    const update = await pushed;
    expect(update).toMatchObject({ conversationId: c2.id, unreadCount: 1, totalUnread: 1, version: 1 });
    expect((await list(ben.token)).totalUnread).toBe(1);
    expect(await reconcileNow()).toMatchObject({ drifted: 0 });
  });

  it("rebuilds a user with 100 000 unread messages, half of them expired, and expires the rest later", async () => {
    // As many unread messages as one sender within the send limit sends in an hour and a half (docs/security.md):
    // the live ones' (conversation, seq, createdAt) triples once overflowed the stack when spread into one call.
    const [ann, ben] = [await user("ann"), await user("ben")];
    const conv = await create(ann.token, [ben.user.name]);
    const n = 100_000;
    // Expiry is judged at clockMs (which an earlier test may have moved a TTL ahead): the live half inside the TTL
    // and not after the wall clock, so a later test's messages are newer.
    const liveAt = Math.max(Date.now(), clockMs - TTL + 1);
    const oldAt = clockMs - TTL - 60_000;
    await h.db.$executeRawUnsafe(
      `INSERT INTO "Message" ("conversationId", "seq", "senderId", "clientMsgId", "content", "createdAt")
       SELECT $1::int, s, $2::int, 'flood-' || s, 'hi',
         to_timestamp(CASE WHEN s <= $3::int / 2 THEN $4::float8 ELSE $5::float8 END / 1000)
       FROM generate_series(1, $3::int) s`,
      conv.id,
      ann.user.id,
      n,
      oldAt,
      liveAt,
    );
    await h.db.$transaction([
      h.db.conversation.update({ where: { id: conv.id }, data: { lastSeq: n } }),
      h.db.membership.update({
        where: { userId_conversationId: { userId: ann.user.id, conversationId: conv.id } },
        data: { lastReadSeq: n },
      }),
    ]);
    const k = userKeys(ben.user.id);
    await h.redis.del(...Object.values(k));
    await h.redis.del(...Object.values(userKeys(ann.user.id)));

    expect(await list(ben.token)).toMatchObject({ totalUnread: n / 2 });
    expect(await h.redis.zcard(k.times)).toBe(n / 2); // the live ones, waiting to expire
    expect(await reconcileNow()).toMatchObject({ drifted: 0 });

    expireUpTo(liveAt);
    expect(await list(ben.token)).toMatchObject({ totalUnread: 0 });
    expect(await h.redis.zcard(k.times)).toBe(0);
    expect(await reconcileNow()).toMatchObject({ drifted: 0 });
  });

  it("rebuilds without messages that are already old in the database, and repairs state that missed an expiry", async () => {
    const [ann, ben] = [await user("ann"), await user("ben")];
    const conv = await create(ann.token, [ben.user.name]);
    // Two messages written a day ago (as if imported), then one now.
    const day = 86_400_000;
    await h.db.$transaction([
      h.db.message.createMany({
        data: [1, 2].map((seq) => ({
          conversationId: conv.id,
          seq,
          senderId: ann.user.id,
          clientMsgId: randomUUID(),
          content: "old",
          createdAt: new Date(Date.now() - day),
        })),
      }),
      h.db.conversation.update({ where: { id: conv.id }, data: { lastSeq: 2 } }),
      h.db.membership.update({
        where: { userId_conversationId: { userId: ann.user.id, conversationId: conv.id } },
        data: { lastReadSeq: 2 },
      }),
    ]);
    // Ben's counters are rebuilt from the database: the old messages do not count. (Ann's too: the import wrote her
    // cursor behind her counters' back, and her next send moves it only over nothing unread.)
    const k = userKeys(ben.user.id);
    await h.redis.del(...Object.values(k));
    await h.redis.del(...Object.values(userKeys(ann.user.id)));
    expect(await list(ben.token)).toMatchObject({ totalUnread: 0 });
    const annSocket = await h.connect(ann.token, 0);
    await send(annSocket, conv.id);
    expect(await list(ben.token)).toMatchObject({ totalUnread: 1 });
    expect(await reconcileNow()).toMatchObject({ drifted: 0 });

    // State built while expiry was off counts the old messages: reconciliation finds and repairs it.
    await patchRecord(h.redis, ben.user.id, conv.id, { aged: 0, unread: 3 });
    await h.redis.hset(k.meta, "total", 3);
    const report = await reconcileNow();
    expect(report).toMatchObject({ drifted: 1, repaired: 1 });
    expect(await list(ben.token)).toMatchObject({ totalUnread: 1 });
  });
});
