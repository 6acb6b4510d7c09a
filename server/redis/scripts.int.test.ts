import type { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { rng, testSeed } from "../testing/random.ts";
import { createRedis } from "./client.ts";
import { unreadScriptKeys, userKeys } from "./keys.ts";

let redis: Redis;
beforeAll(() => {
  redis = createRedis(inject("redisUrl"));
});
afterAll(() => redis.quit());

let prefix = "";
let nextUser = 0;
beforeEach(() => {
  prefix = `t${Date.now().toString(36)}${nextUser++}:`;
});

const keysOf = (user: number) => unreadScriptKeys(user, prefix);
/** apply.lua's reply without the mention, mute and mark fields (checked in their own describe). */
type CountReply = [number, number, number, string, 0 | 1] | [-1];
const counts = (reply: unknown[]) => reply.slice(0, 5) as CountReply;
const apply = async (user: number, conv: number, seen: number, read: number) =>
  counts(await redis.tallyApply(...keysOf(user), conv, seen, read));
/** (conversation, lastSeq, lastReadSeq) triples as membership tuples without mute or mark. */
const tuples = (triples: (number | string)[]) => triples.flatMap((v, i) => (i % 3 === 2 ? [v, 0, 0, 0, 0, 0] : [v]));
/** rebuild.lua's reply without totalMentions (checked in its own describe). */
const create = async (user: number, epoch: string, ...triples: number[]) =>
  (await redis.tallyRebuild(...keysOf(user), epoch, "merge", ...tuples(triples))).slice(0, 4);
const remove = async (user: number, conv: number) => counts(await redis.tallyRemove(...keysOf(user), conv));
const snapshotOf = (user: number) => redis.tallySnapshot(...keysOf(user));

async function state(user: number) {
  const k = userKeys(user, prefix);
  const [meta, unread, seen, read, gone] = await Promise.all([
    redis.hgetall(k.meta),
    redis.hgetall(k.unread),
    redis.hgetall(k.seen),
    redis.hgetall(k.read),
    redis.hgetall(k.gone),
  ]);
  return { meta, unread, seen, read, gone };
}

describe("apply.lua", () => {
  it("writes nothing and asks for a rebuild when the user's state is missing", async () => {
    expect(await apply(1, 10, 5, 0)).toEqual([-1]);
    expect(await redis.exists(...keysOf(1))).toBe(0);
  });

  it("counts a new message: conversation unread, total and version move together", async () => {
    await create(1, "e1");
    expect(await apply(1, 10, 1, 0)).toEqual([1, 1, 2, "e1", 1]);
    expect(await apply(1, 11, 3, 0)).toEqual([3, 4, 3, "e1", 1]);
    expect(await state(1)).toEqual({
      meta: { total: "4", version: "3", epoch: "e1", mentions: "0" },
      unread: { "10": "1", "11": "3" },
      seen: { "10": "1", "11": "3" },
      read: {},
      gone: {},
    });
  });

  it("is idempotent: replaying an event changes nothing, not even the version", async () => {
    await create(1, "e1");
    await apply(1, 10, 4, 0);
    const before = await state(1);
    expect(await apply(1, 10, 4, 0)).toEqual([4, 4, 2, "e1", 0]);
    expect(await apply(1, 10, 2, 0)).toEqual([4, 4, 2, "e1", 0]);
    expect(await state(1)).toEqual(before);
  });

  it("reads up to a seq and leaves later messages unread; cursors never move back", async () => {
    await create(1, "e1");
    await apply(1, 10, 5, 0);
    expect(await apply(1, 10, 0, 3)).toEqual([2, 2, 3, "e1", 1]);
    expect(await apply(1, 10, 0, 1)).toEqual([2, 2, 3, "e1", 0]);
    expect(await apply(1, 10, 0, 5)).toEqual([0, 0, 4, "e1", 1]);
    expect((await state(1)).unread).toEqual({});
  });

  it("does not count the sender's own message", async () => {
    await create(1, "e1");
    expect(await apply(1, 10, 1, 1)).toEqual([0, 0, 1, "e1", 0]);
    expect((await state(1)).read).toEqual({ "10": "1" });
  });

  it("ends in the same state whichever of a send and a read lands first", async () => {
    await create(1, "e1");
    await create(2, "e1");
    await apply(1, 10, 6, 0);
    await apply(1, 10, 0, 6);
    await apply(2, 10, 0, 6);
    await apply(2, 10, 6, 0);
    const [a, b] = [await state(1), await state(2)];
    expect(a.unread).toEqual(b.unread);
    expect(a.seen).toEqual(b.seen);
    expect(a.read).toEqual(b.read);
    expect(a.meta.total).toBe(b.meta.total);
    expect(a.meta.total).toBe("0");
  });

  it("repairs a stored total that drifted from the conversation unreads, counting it and starting a new epoch", async () => {
    await create(1, "e1", 10, 3, 0);
    await redis.hset(userKeys(1, prefix).meta, "total", 7); // drift from outside the scripts
    const reply = await apply(1, 11, 1, 0);
    expect(reply).toEqual([1, 4, 1, expect.stringMatching(/^e1~\d+$/), 1]);
    expect((await state(1)).meta).toMatchObject({ total: "4", repairs: "1" });
    const again = await apply(1, 11, 2, 0);
    expect(again).toEqual([2, 5, 2, reply[3], 1]);
  });

  it("ignores events for a conversation the user left", async () => {
    await create(1, "e1", 10, 3, 0);
    expect(await remove(1, 10)).toEqual([0, 0, 2, "e1", 1]);
    expect(await apply(1, 10, 9, 0)).toEqual([0, 0, 2, "e1", 0]);
    expect(await state(1)).toMatchObject({ unread: {}, seen: {}, read: {}, gone: { "10": "1" } });
  });

  it("rejects bad arguments before writing anything", async () => {
    await create(1, "e1");
    const before = await state(1);
    await expect(redis.tallyApply(...keysOf(1), "" as unknown as number, 1, 0)).rejects.toThrow(/tally apply/);
    await expect(redis.tallyApply(...keysOf(1), 10, -1, 0)).rejects.toThrow(/tally apply/);
    await expect(redis.call("EVAL", "return 1", 0)).resolves.toBe(1);
    expect(await state(1)).toEqual(before);
  });
});

describe("snapshot.lua", () => {
  it("reads counts, total, version and epoch together", async () => {
    expect(await snapshotOf(1)).toEqual([-1]);
    await create(1, "e9", 10, 4, 1, 11, 2, 2, 12, 7, 0);
    const reply = await snapshotOf(1);
    expect(reply.slice(0, 3)).toEqual(["e9", 1, 10]);
    const counts = Object.fromEntries(reply.slice(5).flatMap((v, i, all) => (i % 5 === 0 ? [[v, all[i + 1]]] : [])));
    expect(counts).toEqual({ "10": 3, "12": 7 });
  });
});

describe("remove.lua", () => {
  it("takes the conversation's unread out of the total in the same step, once", async () => {
    await create(1, "e1", 10, 3, 0, 11, 2, 0);
    expect(await remove(1, 10)).toEqual([0, 2, 2, "e1", 1]);
    expect(await remove(1, 10)).toEqual([0, 2, 2, "e1", 0]);
    expect((await state(1)).unread).toEqual({ "11": "2" });
    expect(await redis.tallyRemove(...unreadScriptKeys(99, prefix), 10)).toEqual([-1]);
  });
});

describe("inspect.lua", () => {
  it("returns every hash of the user at once", async () => {
    expect(await redis.tallyInspect(...keysOf(1))).toEqual([-1]);
    await create(1, "e1", 10, 3, 1);
    const [meta, unread, seen, read, gone] = (await redis.tallyInspect(...keysOf(1))) as string[][];
    expect(meta).toEqual(expect.arrayContaining(["epoch", "e1", "total", "2"]));
    expect([unread, seen, read, gone]).toEqual([["10", "2"], ["10", "3"], ["10", "1"], []]);
  });
});

describe("rebuild.lua", () => {
  it("creates state from the database's triples with version 1", async () => {
    expect(await create(1, "e1", 10, 5, 2, 11, 3, 3)).toEqual(["e1", 1, 3, "created"]);
    expect(await state(1)).toMatchObject({ meta: { total: "3", version: "1", epoch: "e1" }, unread: { "10": "3" } });
  });

  it("merges into existing state without undoing later events, and changes nothing when nothing is new", async () => {
    await create(1, "e1", 10, 5, 2);
    await apply(1, 10, 8, 0); // an event applied after the rebuild read the database
    expect(await create(1, "e2", 10, 5, 2)).toEqual(["e1", 2, 6, "unchanged"]);
    expect(await create(1, "e3", 10, 8, 8, 11, 1, 0)).toEqual(["e3", 1, 1, "merged"]);
    expect(await state(1)).toMatchObject({ meta: { total: "1", epoch: "e3" }, unread: { "11": "1" } });
  });

  it("repairs a stored total that disagrees with the conversation unreads", async () => {
    await create(1, "e1", 10, 5, 2);
    await redis.hset(userKeys(1, prefix).meta, "total", 99);
    expect(await snapshotOf(1)).toEqual([-2]);
    expect(await create(1, "e2", 10, 5, 2)).toEqual(["e2", 1, 3, "merged"]);
    expect((await snapshotOf(1)).slice(0, 3)).toEqual(["e2", 1, 3]);
  });

  it("replaces state that holds more than the database, which a merge cannot undo", async () => {
    await create(1, "e1", 10, 5, 2, 11, 4, 0);
    expect(await redis.tallyRebuild(...keysOf(1), "e2", "replace", ...tuples([10, 5, 5]))).toEqual([
      "e2",
      1,
      0,
      "replaced",
      0,
    ]);
    expect(await state(1)).toMatchObject({ unread: {}, seen: { "10": "5" }, read: { "10": "5" } });
  });

  it("clears a gone mark for a conversation the user is a member of again", async () => {
    await create(1, "e1", 10, 5, 2);
    await redis.tallyRemove(...keysOf(1), 10);
    expect(await create(1, "e2", 10, 5, 2)).toEqual(["e2", 1, 3, "merged"]);
    expect((await state(1)).gone).toEqual({});
  });

  it("rejects malformed triples before writing", async () => {
    await expect(create(1, "e1", 10, 5)).rejects.toThrow(/tally rebuild/);
    await expect(redis.tallyRebuild(...keysOf(1), "e1", "other" as "merge")).rejects.toThrow(/tally rebuild/);
    expect(await redis.exists(...keysOf(1))).toBe(0);
  });
});

describe("randomized: total == sum of conversation unreads", () => {
  it("holds after every one of 10,000 events over many conversations, delivered late, twice and out of order", async () => {
    const seed = testSeed();
    const r = rng(seed);
    const users = [1, 2, 3];
    const conversations = Array.from({ length: 40 }, (_, i) => 100 + i);
    const lastSeq = new Map<number, number>();
    const truth = new Map<string, { seen: number; read: number }>();
    for (const u of users) await create(u, "e1");
    const pending: [number, number, number, number][] = [];
    try {
      for (let op = 0; op < 10_000; op++) {
        const u = r.pick(users);
        const c = r.pick(conversations);
        let event: [number, number, number, number];
        if (pending.length > 0 && r.chance(0.3)) {
          event = pending.splice(r.int(0, pending.length - 1), 1)[0]!; // a late or repeated delivery
        } else if (r.chance(0.6)) {
          const seq = (lastSeq.get(c) ?? 0) + 1;
          lastSeq.set(c, seq);
          event = [u, c, seq, r.chance(0.2) ? seq : 0];
        } else {
          event = [u, c, 0, r.int(0, lastSeq.get(c) ?? 0)];
        }
        if (r.chance(0.2)) pending.push(event);
        const [eu, ec, seen, read] = event;
        const t = truth.get(`${eu}:${ec}`) ?? { seen: 0, read: 0 };
        truth.set(`${eu}:${ec}`, { seen: Math.max(t.seen, seen), read: Math.max(t.read, read) });
        const reply = await apply(eu, ec, seen, read);
        const expectedTotal = [...truth.entries()]
          .filter(([k]) => k.startsWith(`${eu}:`))
          .reduce((sum, [, v]) => sum + Math.max(0, v.seen - v.read), 0);
        expect(reply[1], `total after op ${op}`).toBe(expectedTotal);
        if (op % 500 === 0) await checkSums();
      }
      await checkSums();
      for (const u of users) {
        const { unread } = await state(u);
        for (const c of conversations) {
          const t = truth.get(`${u}:${c}`) ?? { seen: 0, read: 0 };
          expect(Number(unread[String(c)] ?? 0), `user ${u} conversation ${c}`).toBe(Math.max(0, t.seen - t.read));
        }
      }
    } catch (err) {
      console.error(`randomized script test failed; replay with TEST_SEED=${seed}`);
      throw err;
    }

    async function checkSums() {
      for (const u of users) {
        const { meta, unread } = await state(u);
        const sum = Object.values(unread).reduce((s, v) => s + Number(v), 0);
        expect(Number(meta.total), `user ${u}: total == sum`).toBe(sum);
      }
    }
  });
});

describe("unread expiry (UNREAD_TTL_DAYS)", () => {
  // Every call passes its own "now": the tests decide which instant expiry is judged at, never the machine's
  // speed. T0 is any fixed instant; the TTL is an hour.
  const HOUR = 3_600_000;
  const T0 = Date.UTC(2030, 0, 1);
  const PAST = T0 + HOUR + 1; // the first instant at which a message created at T0 has expired
  const applyAt = async (user: number, conv: number, seen: number, read: number, createdAt: number, now: number) =>
    counts(await redis.tallyApply(...keysOf(user), conv, seen, read, createdAt, HOUR, now));
  /** [epoch, version, total, expired, conv, unread, …]: snapshot.lua's reply without mentions, mutes and marks. */
  const snapshot = async (user: number, now: number, ttl = HOUR) => {
    const reply = await redis.tallySnapshotExpiring(...keysOf(user), ttl, now);
    if (reply.length === 1) return reply;
    const [epoch, version, total, , expired, ...rest] = reply;
    const pairs = rest.flatMap((v, i) => (i % 5 < 2 ? [String(v)] : []));
    return [epoch, version, total, expired, ...pairs];
  };

  async function full(user: number) {
    const k = userKeys(user, prefix);
    const [s, aged, times] = await Promise.all([
      state(user),
      redis.hgetall(k.aged),
      redis.zrange(k.times, "0", "-1", "WITHSCORES"),
    ]);
    return { ...s, aged, times };
  }

  async function expectTotalIsSum(user: number) {
    const { meta, unread } = await state(user);
    const sum = Object.values(unread).reduce((s, v) => s + Number(v), 0);
    expect(Number(meta.total), "total == sum").toBe(sum);
  }

  it("does not count a message that is already older than the TTL, and tracks a fresh one", async () => {
    await create(1, "e1");
    expect(await applyAt(1, 10, 1, 0, T0 - 2 * HOUR, T0)).toEqual([0, 0, 1, "e1", 0]);
    expect(await applyAt(1, 10, 2, 0, T0, T0)).toEqual([1, 1, 2, "e1", 1]);
    expect(await full(1)).toMatchObject({
      seen: { "10": "2" },
      aged: { "10": "1" },
      times: ["0000000010:0000000002", String(T0)],
    });
  });

  it("stops counting a message once it is older than the TTL, at the next snapshot: total == sum, a new epoch", async () => {
    await create(1, "e1");
    await applyAt(1, 10, 1, 0, T0, T0);
    await applyAt(1, 10, 2, 0, T0, T0);
    await applyAt(1, 11, 1, 0, T0, T0);
    await applyAt(1, 12, 1, 0, T0 + HOUR / 2, T0); // still inside the TTL at PAST
    expect((await snapshot(1, T0)).slice(0, 4)).toEqual(["e1", 5, 4, 0]);
    // Exactly one TTL after its creation a message still counts; one millisecond later it does not.
    expect((await snapshot(1, T0 + HOUR)).slice(0, 4)).toEqual(["e1", 5, 4, 0]);
    const reply = await snapshot(1, PAST);
    expect(reply.slice(0, 4)).toEqual([expect.stringMatching(/^e1~\d+$/), 1, 1, 1]);
    expect(reply.slice(4)).toEqual(["12", "1"]);
    await expectTotalIsSum(1);
    expect(await full(1)).toMatchObject({
      aged: { "10": "2", "11": "1" },
      times: ["0000000012:0000000001", String(T0 + HOUR / 2)],
    });
    // Nothing more to expire: the next snapshot at the same instant is a plain read of the new epoch.
    expect((await snapshot(1, PAST)).slice(0, 4)).toEqual([reply[0], 1, 1, 0]);
    // A TTL of 0 never expires, whatever the instant, and the read-only snapshot only reads.
    expect((await snapshot(1, T0 + 100 * HOUR, 0)).slice(0, 4)).toEqual([reply[0], 1, 1, 0]);
    expect((await snapshotOf(1)).slice(0, 3)).toEqual([reply[0], 1, 1]);
  });

  it("expires at the next apply: one version step when only the event's conversation changed", async () => {
    await create(1, "e1");
    await applyAt(1, 10, 1, 0, T0, T0);
    await applyAt(1, 10, 2, 0, T0, T0);
    // Both earlier messages expire, the new one counts: the push describes conversation 10 alone.
    expect(await applyAt(1, 10, 3, 0, PAST, PAST)).toEqual([1, 1, 4, "e1", 1]);
    await expectTotalIsSum(1);
  });

  it("starts a new epoch when expiry at an apply changes another conversation", async () => {
    await create(1, "e1");
    await applyAt(1, 10, 1, 0, T0, T0);
    await applyAt(1, 11, 1, 0, T0, T0);
    await applyAt(1, 11, 2, 0, T0, T0);
    const reply = await applyAt(1, 12, 1, 0, PAST, PAST);
    expect(reply).toEqual([1, 1, 1, expect.stringMatching(/^e1~\d+$/), 1]);
    expect((await state(1)).unread).toEqual({ "12": "1" });
    await expectTotalIsSum(1);
    // The new epoch continues one step per change.
    expect(await applyAt(1, 12, 2, 0, PAST, PAST)).toEqual([2, 2, 2, reply[3], 1]);
  });

  it("forgets the timestamps a read covers, and a message expiring after its read changes nothing", async () => {
    await create(1, "e1");
    const later = T0 + HOUR / 2;
    for (const seq of [1, 2, 3]) await applyAt(1, 10, seq, 0, T0, T0);
    await applyAt(1, 11, 1, 0, later, T0);
    expect(await applyAt(1, 10, 3, 2, 0, T0)).toEqual([1, 2, 6, "e1", 1]);
    expect((await full(1)).times).toEqual([
      "0000000010:0000000003",
      String(T0),
      "0000000011:0000000001",
      String(later),
    ]);
    await applyAt(1, 10, 0, 3, 0, T0);
    expect((await full(1)).times).toEqual(["0000000011:0000000001", String(later)]);
    expect((await snapshot(1, PAST)).slice(0, 4)).toEqual(["e1", 7, 1, 0]);
  });

  it("forgets only the timestamps of the conversation read or removed, whatever their order in time", async () => {
    await create(1, "e1");
    // By time: 12:1, then 10:1, 11:1 (below 12 in member order), then 13:1 and 14:1.
    const messages: [number, number][] = [
      [12, T0],
      [10, T0 + 60_000],
      [11, T0 + 120_000],
      [13, T0 + 180_000],
      [14, T0 + 240_000],
    ];
    for (const [c, t] of messages) await applyAt(1, c, 1, 0, t, T0);
    const others = (gone: number[]) =>
      messages.filter(([c]) => !gone.includes(c)).flatMap(([c, t]) => [`00000000${c}:0000000001`, String(t)]);
    await applyAt(1, 12, 0, 1, 0, T0);
    expect((await full(1)).times).toEqual(others([12]));
    await redis.tallyRemove(...keysOf(1), 13);
    expect((await full(1)).times).toEqual(others([12, 13]));
    // The messages kept still expire on time.
    expect((await snapshot(1, T0 + HOUR + 120_001)).slice(2, 4)).toEqual([1, 1]);
    expect((await full(1)).times).toEqual(others([10, 11, 12, 13]));
  });

  it("is idempotent and order-insensitive with expiry on", async () => {
    await create(1, "e1");
    await create(2, "e1");
    const events: [number, number, number, number][] = [
      [10, 1, 0, T0 - 2 * HOUR], // already expired
      [10, 2, 0, T0],
      [10, 3, 0, T0 - 2 * HOUR], // expired, and above a fresh one (timestamps need not follow seqs)
      [10, 4, 0, T0],
      [10, 5, 0, T0],
      [10, 0, 4, 0],
      [11, 1, 0, T0],
      [11, 0, 1, 0],
      [11, 2, 0, T0 - 2 * HOUR],
    ];
    for (const [c, s, r, t] of events) await applyAt(1, c, s, r, t, T0);
    const before = await full(1);
    for (const [c, s, r, t] of events) expect((await applyAt(1, c, s, r, t, T0))[4]).toBe(0);
    expect(await full(1)).toEqual(before);
    for (const [c, s, r, t] of [...events].reverse()) await applyAt(2, c, s, r, t, T0);
    const other = await full(2);
    expect({ ...other, meta: { total: other.meta.total } }).toEqual({ ...before, meta: { total: before.meta.total } });
    expect(before.unread).toEqual({ "10": "1" });
    expect(before.times).toEqual(["0000000010:0000000005", String(T0)]);
    expect(before.aged).toEqual({ "11": "2" }); // conversation 10's expired mark fell below its cursor
  });

  it("rebuilds from the database's messages to the state live applies reach", async () => {
    await create(1, "e1");
    const old = T0 - 2 * HOUR;
    const messages: [number, number, number][] = [
      [10, 1, old],
      [10, 2, old],
      [10, 3, T0],
      [10, 4, T0],
      [11, 1, T0],
      [12, 1, old],
    ];
    for (const [c, s, t] of messages) await applyAt(1, c, s, 0, t, T0);
    await applyAt(1, 10, 0, 1, 0, T0);
    const live = await full(1);
    // The database: (conversation, lastSeq, lastReadSeq), then the unread messages with their createdAt.
    const triples = [10, 4, 1, 11, 1, 0, 12, 1, 0];
    const unreadMessages = messages.filter(([c, s]) => !(c === 10 && s <= 1)).flat();
    const rebuild = async (user: number, epoch: string, now: number, ...rest: number[]) =>
      (
        await redis.tallyRebuild(...keysOf(user), epoch, "merge", ...tuples(triples), "ttl", HOUR, "now", now, ...rest)
      ).slice(0, 4);
    expect(await rebuild(2, "e2", T0, ...unreadMessages)).toEqual(["e2", 1, 3, "created"]);
    const rebuilt = await full(2);
    expect({ ...rebuilt, meta: rebuilt.meta.total }).toEqual({ ...live, meta: live.meta.total });
    // Merging the same truth again changes nothing; the highest expired message alone says as much.
    expect(await rebuild(2, "e3", T0, 10, 2, old, 10, 3, T0, 10, 4, T0)).toEqual(["e2", 1, 3, "unchanged"]);
    // Into existing state, a rebuild that knows of an expiry merges it and starts a new epoch.
    expect(await rebuild(1, "e4", T0, 11, 1, old)).toEqual(["e4", 1, 2, "merged"]);
    await expectTotalIsSum(1);
    // A rebuild at a later instant expires what has expired by then.
    expect(await rebuild(2, "e5", PAST, 10, 2, old, 10, 3, T0, 10, 4, T0)).toEqual(["e5", 1, 0, "merged"]);
    expect(await full(2)).toMatchObject({ unread: {}, times: [], aged: { "10": "4", "11": "1", "12": "1" } });
  });

  it("rejects malformed message triples and instants before writing", async () => {
    await expect(
      redis.tallyRebuild(...keysOf(1), "e1", "merge", ...tuples([10, 2, 0]), "ttl", HOUR, 10, 1),
    ).rejects.toThrow(/tally rebuild/);
    await expect(
      redis.tallyRebuild(...keysOf(1), "e1", "merge", ...tuples([10, 2, 0]), "ttl", HOUR, "now", "soon", 10, 1, T0),
    ).rejects.toThrow(/tally rebuild/);
    await expect(redis.tallyApply(...keysOf(1), 10, 1, 0, -5, HOUR)).rejects.toThrow(/tally apply/);
    expect(await redis.exists(...keysOf(1))).toBe(0);
    await create(1, "e1");
    const before = await full(1);
    await expect(redis.tallyApply(...keysOf(1), 10, 1, 0, T0, HOUR, -1)).rejects.toThrow(/tally apply/);
    await expect(redis.tallySnapshotExpiring(...keysOf(1), HOUR, "later" as never)).rejects.toThrow(/tally snapshot/);
    await expect(redis.tallyInspect(...keysOf(1), HOUR, -1)).rejects.toThrow(/tally inspect/);
    expect(await full(1)).toEqual(before);
  });

  it("remove.lua drops the conversation's timestamps and expired mark", async () => {
    await create(1, "e1");
    await applyAt(1, 10, 1, 0, T0 - 2 * HOUR, T0);
    await applyAt(1, 10, 2, 0, T0, T0);
    await applyAt(1, 11, 1, 0, T0, T0);
    expect(await remove(1, 10)).toEqual([0, 1, 4, "e1", 1]);
    expect(await full(1)).toMatchObject({ aged: {}, times: ["0000000011:0000000001", String(T0)] });
  });

  it("inspect.lua expires first and tells the instant it used: the one given, else the server's TIME", async () => {
    await create(1, "e1");
    await applyAt(1, 10, 1, 0, T0, T0);
    const reply = await redis.tallyInspect(...keysOf(1), HOUR, PAST);
    if (reply.length === 1) throw new Error("missing");
    const [meta, unread, , , , aged, now, expired] = reply;
    expect([unread, aged, now, expired]).toEqual([[], ["10", "1"], PAST, 1]);
    expect(meta).toEqual(expect.arrayContaining(["total", "0", "version", "1"]));

    const redisNow = async () => {
      const [seconds, micros] = await redis.time();
      return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    };
    const before = await redisNow();
    const plain = await redis.tallyInspect(...keysOf(1), HOUR);
    const after = await redisNow();
    if (plain.length === 1) throw new Error("missing");
    expect(plain[6]).toBeGreaterThanOrEqual(before);
    expect(plain[6]).toBeLessThanOrEqual(after);
  });

  it("randomized: total == sum, one version step per change, and a new epoch exactly when expiry changes another conversation", async () => {
    const seed = testSeed();
    const r = rng(seed);
    const conversations = Array.from({ length: 20 }, (_, i) => 200 + i);
    const lastSeq = new Map<number, number>();
    const createdAt = new Map<string, number>(); // each message's fixed timestamp
    // The model: max-registers per conversation, and the messages whose event was applied (only those have a
    // timestamp in Redis; an expired one covers every seq below it, as a read cursor does).
    const truth = new Map<number, { seen: number; read: number; aged: number }>();
    const delivered: [number, number][] = [];
    const unreadOf = (c: number) => {
      const t = truth.get(c) ?? { seen: 0, read: 0, aged: 0 };
      return Math.max(0, t.seen - Math.max(t.read, t.aged));
    };
    await create(1, "e1");
    const pending: [number, number, number][] = [];
    let now = T0;
    try {
      let version = 1;
      let epoch = "e1";
      for (let op = 0; op < 3_000; op++) {
        now += r.chance(0.5) ? 0 : r.int(0, 20 * 60_000); // time moves on by up to 20 minutes, or not at all
        const c = r.pick(conversations);
        let event: [number, number, number];
        if (pending.length > 0 && r.chance(0.3)) event = pending.splice(r.int(0, pending.length - 1), 1)[0]!;
        else if (r.chance(0.6)) {
          const seq = (lastSeq.get(c) ?? 0) + 1;
          lastSeq.set(c, seq);
          createdAt.set(`${c}:${seq}`, r.chance(0.3) ? now - r.int(0, 2 * HOUR) : now);
          event = [c, seq, 0];
        } else event = [c, 0, r.int(0, lastSeq.get(c) ?? 0)];
        if (r.chance(0.2)) pending.push(event);
        const [ec, seen, read] = event;
        const ts = seen > 0 ? createdAt.get(`${ec}:${seen}`)! : 0;

        const before = new Map(conversations.map((cv) => [cv, unreadOf(cv)]));
        const t = truth.get(ec) ?? { seen: 0, read: 0, aged: 0 };
        truth.set(ec, { ...t, seen: Math.max(t.seen, seen), read: Math.max(t.read, read) });
        if (seen > 0) delivered.push([ec, seen]);
        for (const [dc, ds] of delivered) {
          const d = truth.get(dc)!;
          if (createdAt.get(`${dc}:${ds}`)! < now - HOUR && ds > d.aged) d.aged = ds;
        }
        const changed = conversations.filter((cv) => unreadOf(cv) !== before.get(cv));

        const reply = await applyAt(1, ec, seen, read, ts, now);
        if (reply.length === 1) throw new Error("state missing");
        const expectedTotal = conversations.reduce((sum, cv) => sum + unreadOf(cv), 0);
        expect(reply[0], `unread after op ${op}`).toBe(unreadOf(ec));
        expect(reply[1], `total after op ${op}`).toBe(expectedTotal);
        expect(reply[4], `changed after op ${op}`).toBe(changed.length > 0 ? 1 : 0);
        const newEpoch = changed.some((cv) => cv !== ec);
        expect(reply[3] !== epoch, `new epoch after op ${op}`).toBe(newEpoch);
        expect(reply[2], `version after op ${op}`).toBe(newEpoch ? 1 : version + reply[4]);
        version = reply[2];
        epoch = reply[3];
      }
      await expectTotalIsSum(1);
      const { unread } = await state(1);
      for (const c of conversations) expect(Number(unread[String(c)] ?? 0), `conversation ${c}`).toBe(unreadOf(c));
    } catch (err) {
      console.error(`randomized expiry test failed; replay with TEST_SEED=${seed}`);
      throw err;
    }
  });
});
