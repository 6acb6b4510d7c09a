import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { rng, testSeed } from "../testing/random.ts";
import { replicationTerm } from "../testing/redis.ts";
import { readPlainSnapshot } from "./snapshot.ts";
import { createRedis, isClusterTarget, type RedisClient } from "./client.ts";
import { rebuildScriptKeys, unreadScriptKeys, userKeys } from "./keys.ts";
import {
  formatRecord,
  parseRecord,
  SNAPSHOT_META_FIELDS,
  snapshotOfRecords,
  type ApplyPart,
  readOfReply,
  type SnapshotRead,
} from "./scripts.ts";

/** A "gone" mark's value: the instant (ms) it was set (includes/gone.lua). */
const STAMPED = expect.stringMatching(/^[1-9]\d{12}$/);

let redis: RedisClient;
beforeAll(() => {
  redis = createRedis(inject("redisTarget"));
});
afterAll(() => redis.quit());

let prefix = "";
let nextUser = 0;
beforeEach(() => {
  prefix = `t${Date.now().toString(36)}${nextUser++}:`;
});

const keysOf = (user: number) => unreadScriptKeys(user, prefix);
const rebuildKeysOf = (user: number) => rebuildScriptKeys(user, prefix);
/** apply.lua's reply without the mention, mute and mark fields (checked in their own describe). */
type CountReply = [number, number, number, string, 0 | 1] | [-1];
const counts = (reply: unknown[]) => reply.slice(0, 5) as CountReply;
const apply = async (user: number, conv: number, seen: number, read: number) =>
  counts(await redis.tallyApply(...keysOf(user), conv, seen, read));
/** (conversation, lastSeq, lastReadSeq) triples as membership tuples without mute or mark. */
const tuples = (triples: (number | string)[]) => triples.flatMap((v, i) => (i % 3 === 2 ? [v, 0, 0, 0, 0, 0] : [v]));
/** rebuild.lua's reply without totalMentions (checked in its own describe). */
const create = async (user: number, epoch: string, ...triples: number[]) =>
  (await redis.tallyRebuild(...rebuildKeysOf(user), epoch, "merge", ...tuples(triples))).slice(0, 4);
const remove = async (user: number, conv: number) => counts(await redis.tallyRemove(...keysOf(user), conv));
const snapshotOf = (user: number) => redis.tallySnapshot(...keysOf(user));

/** A flat (field, value) list as an object of strings. */
function fields(flat: (string | number)[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = String(flat[i + 1]);
  return out;
}

/** Everything stored for a user, one object per value (conversation -> value), as inspect.lua reads it. */
async function state(user: number) {
  const reply = await redis.tallyInspect(...keysOf(user));
  if (reply.length === 1) throw new Error(`user ${user} has no usable state`);
  const [metaFlat, unread, seen, read, gone, aged, , , mcount, st] = reply;
  const { term: _term, ...meta } = fields(metaFlat);
  return {
    meta,
    unread: fields(unread),
    seen: fields(seen),
    read: fields(read),
    gone: fields(gone),
    aged: fields(aged),
    mcount: fields(mcount),
    state: fields(st),
  };
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
    expect(await state(1)).toMatchObject({
      meta: { total: "4", version: "3", epoch: "e1", mentions: "0" },
      unread: { "10": "1", "11": "3" },
      seen: { "10": "1", "11": "3" },
      read: {},
      gone: {},
    });
    // One record per conversation: seen, read, unread (docs/consistency.md, "The Redis layout").
    expect(await redis.hgetall(userKeys(1, prefix).convs)).toEqual({ "10": "1:0:1", "11": "3:0:3" });
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

  const own = async (user: number, conv: number, seq: number) =>
    counts(await redis.tallyApply(...keysOf(user), conv, seq, 0, 0, 0, "", "own"));

  it("never counts an own message, and moves the cursor over it only when nothing unread lies below it", async () => {
    await create(1, "e1");
    // Caught up: the cursor moves over the own message (no set member).
    expect(await own(1, 10, 1)).toEqual([0, 0, 1, "e1", 0]);
    expect((await state(1)).read).toEqual({ "10": "1" });
    // Two messages from others arrive unseen, then the user sends (a reply from the divider, or a message queued
    // offline): those two stay unread and the own message does not count.
    await apply(1, 10, 3, 0);
    expect(await own(1, 10, 4)).toEqual([2, 2, 2, "e1", 0]);
    expect((await state(1)).read).toEqual({ "10": "1" });
    expect(await redis.zrange(userKeys(1, prefix).ment, "0", "-1")).toEqual(["0000000010:o0000000004"]);
    // Another message, then a read of the first unseen one only: 2 are left (3 and 5), not 1 nor 3.
    expect(await apply(1, 10, 5, 0)).toEqual([3, 3, 3, "e1", 1]);
    expect(await apply(1, 10, 0, 2)).toEqual([2, 2, 4, "e1", 1]);
    // Reading up to 3 moves the cursor over the own message at 4, and the set forgets it.
    expect(await apply(1, 10, 0, 3)).toEqual([1, 1, 5, "e1", 1]);
    expect((await state(1)).read).toEqual({ "10": "4" });
    expect(await redis.exists(userKeys(1, prefix).ment)).toBe(0);
  });

  it("ends in the same state whatever the order of own messages, others' messages and reads", async () => {
    // Others' 1, 2; own 3; others' 4; own 5, 6; a read of 2; a read of 4. Every order ends at cursor 6, nothing unread.
    const run = (user: number) => [
      () => apply(user, 10, 2, 0),
      () => own(user, 10, 3),
      () => apply(user, 10, 4, 0),
      () => own(user, 10, 5),
      () => own(user, 10, 6),
      () => apply(user, 10, 0, 2),
      () => apply(user, 10, 0, 4),
    ];
    const orders = [
      [0, 1, 2, 3, 4, 5, 6],
      [6, 5, 4, 3, 2, 1, 0],
      [4, 3, 6, 1, 5, 0, 2],
      [5, 1, 0, 6, 3, 2, 4],
    ];
    for (const [i, order] of orders.entries()) {
      const user = 20 + i;
      await create(user, "e1");
      for (const k of order) await run(user)[k]!();
      expect(await state(user), `order ${order.join()}`).toMatchObject({ unread: {}, read: { "10": "6" } });
      expect(await redis.exists(userKeys(user, prefix).ment)).toBe(0);
    }
  });

  it("a deletion and its message's event end in the same state in either order: neither it nor its mention counts", async () => {
    // Others' 1, 2 (mentions the user), 3, 4; 2 and 4 deleted. Message events first for user 30, the deletions
    // first for user 31; then a read of 1 for both. A deletion moves no cursor: the read stays where it was put.
    const message = (user: number, seq: number, ...parts: ApplyPart[]) =>
      redis.tallyApply(...keysOf(user), 10, seq, 0, 0, 0, "", ...parts);
    const steps: Record<string, (user: number) => Promise<unknown>> = {
      m1: (u) => message(u, 1),
      m2: (u) => message(u, 2, "mention"),
      m3: (u) => message(u, 3),
      m4: (u) => message(u, 4),
      d2: (u) => message(u, 2, "deleted"),
      d4: (u) => message(u, 4, "deleted"),
    };
    for (const [user, order] of [
      [30, ["m1", "m2", "m3", "m4", "d2", "d4"]],
      [31, ["d4", "d2", "m4", "m3", "m2", "m1"]],
    ] as const) {
      await create(user, "e1");
      for (const step of order) await steps[step]!(user);
      // 1 and 3 count; the mention of 2 does not.
      expect(await state(user), `user ${user}`).toMatchObject({
        unread: { "10": "2" },
        mcount: {},
        meta: { total: "2", mentions: "0" },
      });
      await redis.tallyApply(...keysOf(user), 10, 0, 1, 0, 0, "");
      expect(await state(user), `user ${user}`).toMatchObject({ unread: { "10": "1" }, read: { "10": "1" } });
      await redis.tallyApply(...keysOf(user), 10, 0, 4, 0, 0, "");
      expect(await state(user), `user ${user}`).toMatchObject({ unread: {}, read: { "10": "4" } });
      expect(await redis.exists(userKeys(user, prefix).ment), `user ${user}`).toBe(0);
    }
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

  it("never sums: a stored sum that drifted stays off by exactly its drift, neither grown nor hidden", async () => {
    await create(1, "e1", 10, 3, 0);
    await redis.hset(userKeys(1, prefix).meta, "total", 7); // drift from outside the scripts: the unreads sum to 3
    expect(await apply(1, 11, 1, 0)).toEqual([1, 8, 2, "e1", 1]);
    expect(await apply(1, 10, 0, 3)).toEqual([0, 5, 3, "e1", 1]);
    expect(await state(1)).toMatchObject({ meta: { total: "5" }, unread: { "11": "1" } });
    // A part written without its sum (a lost increment): the conversation is derived again, the offset stays.
    await create(2, "e1", 10, 3, 0);
    await redis.hset(userKeys(2, prefix).convs, "10", "3:0:1"); // seen 3, read 0, unread 1 (it should be 3)
    expect(await apply(2, 10, 4, 0)).toEqual([4, 6, 2, "e1", 1]);
    for (const user of [1, 2]) {
      expect((await state(user)).meta.repairs).toBeUndefined();
      // A sync refuses such state; rebuild.lua repairs it (its own describe).
      expect(await snapshotOf(user)).toEqual([-2]);
    }
  });

  it("ignores events for a conversation the user left", async () => {
    await create(1, "e1", 10, 3, 0);
    expect(await remove(1, 10)).toEqual([0, 0, 2, "e1", 1]);
    expect(await apply(1, 10, 9, 0)).toEqual([0, 0, 2, "e1", 0]);
    expect(await state(1)).toMatchObject({ unread: {}, seen: {}, read: {}, gone: { "10": STAMPED } });
  });

  it("keeps gone marks as long as a late event may come, pruning older ones now and then", async () => {
    const T0 = Date.UTC(2030, 0, 1);
    const DAY = 86_400_000;
    const keys = keysOf(1);
    await create(1, "e1", 10, 3, 0);
    await redis.hset(userKeys(1, prefix).gone, "9999", "1"); // a mark of the earlier layout, with no time
    // 255 marks at T0: below 256 nothing is pruned, and a remove without a memory never prunes.
    for (let conv = 1000; conv < 1254; conv++) await redis.tallyRemove(...keys, conv, T0, DAY);
    await redis.tallyRemove(...keys, 10, T0 + DAY + 1);
    expect(await redis.hlen(userKeys(1, prefix).gone)).toBe(256);
    // The next mark, more than a day later, makes 256: the marks older than a day go, the old layout's is stamped.
    await redis.hdel(userKeys(1, prefix).gone, "1253");
    await redis.tallyRemove(...keys, 2000, T0 + DAY + 1, DAY);
    expect(await redis.hgetall(userKeys(1, prefix).gone)).toEqual({
      "9999": String(T0 + DAY + 1),
      "10": String(T0 + DAY + 1),
      "2000": String(T0 + DAY + 1),
    });
    // Marks within the day still stop a late event; a pruned one no longer could, and none comes that late.
    expect(await apply(1, 2000, 9, 0)).toEqual([0, 0, 2, "e1", 0]);
    expect(await apply(1, 10, 9, 0)).toEqual([0, 0, 2, "e1", 0]);
    await expect(redis.tallyRemove(...keys, 11, "soon" as never)).rejects.toThrow(/tally remove: bad instant/);
    await expect(redis.tallyRemove(...keys, 11, "", -1)).rejects.toThrow(/tally remove: bad memory/);
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

describe("the layout", () => {
  it("keeps its keys apart from the earlier layout's, and every rebuild deletes what those still hold", async () => {
    // As the layout before records left a user (or an instance of that version writes it during a rolling restart):
    // meta and a hash per register under {u:<id>}:…, which these scripts never read.
    const legacy = rebuildKeysOf(1).slice(5);
    const [metaKey, unreadKey, seenKey] = legacy;
    await redis.hset(metaKey!, "total", 2, "version", 7, "epoch", "old", "mentions", 0, "term", "-");
    await redis.hset(unreadKey!, "10", 2);
    await redis.hset(seenKey!, "10", 2);
    expect(await apply(1, 10, 3, 0)).toEqual([-1]);
    expect(await snapshotOf(1)).toEqual([-1]);
    expect(await remove(1, 11)).toEqual([-1]);
    expect(await redis.tallyInspect(...keysOf(1))).toEqual([-1]);
    expect(await create(1, "e1", 10, 3, 0)).toEqual(["e1", 1, 3, "created"]);
    expect(await redis.exists(...legacy)).toBe(0);
    expect(await redis.hgetall(userKeys(1, prefix).convs)).toEqual({ "10": "3:0:3" });
    expect(await state(1)).toMatchObject({ meta: { total: "3", epoch: "e1" }, gone: { "11": STAMPED } });
    // Written again by an instance of the earlier version: the next rebuild deletes it, the state stays.
    await redis.hset(metaKey!, "total", 9, "epoch", "old");
    expect(await create(1, "e2", 10, 3, 0)).toEqual(["e1", 1, 3, "unchanged"]);
    expect(await redis.exists(...legacy)).toBe(0);
    expect(await apply(1, 10, 4, 0)).toEqual([4, 4, 2, "e1", 1]);
  });

  it("ignores a late event for a conversation the user left even after expiry wrote an expired mark for it", async () => {
    // A timestamp left behind in `times` (the cursor moved while expiry was off) expires after the departure, and
    // raises `aged` in a record for the gone conversation: a record with nothing seen or read can still be gone.
    const HOUR = 3_600_000;
    await create(1, "e1", 5, 0, 0, 6, 0, 0);
    await redis.tallyApply(...keysOf(1), 5, 3, 0, 1000, HOUR, 1000); // tracked in `times`
    await redis.tallyApply(...keysOf(1), 5, 0, 3); // read with expiry off: the timestamp stays
    expect(await remove(1, 5)).toEqual([0, 0, 3, "e1", 0]);
    await redis.tallyApply(...keysOf(1), 6, 1, 0, 2 * HOUR, HOUR, 2 * HOUR + 1001); // expires message 3 of 5
    expect(await redis.hget(userKeys(1, prefix).convs, "5")).toBe("0:0:0:0:0:3");
    for (const [seen, read] of [
      [4, 0],
      [0, 0],
    ])
      expect(counts(await redis.tallyApply(...keysOf(1), 5, seen!, read!))).toEqual([0, 1, 4, "e1", 0]);
    expect(counts(await redis.tallyApply(...keysOf(1), 5, 4, 0, 0, 0, "", "clear", 0))).toEqual([0, 1, 4, "e1", 0]);
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

  it("moves the version for any conversation a snapshot lists, even when the sums stay: a muted one's unread", async () => {
    await create(1, "e1", 10, 3, 0, 11, 2, 2, 12, 1, 0);
    // 12 muted: its unread leaves the total, it stays listed (version 2).
    await redis.tallyApply(...keysOf(1), 12, 0, 0, 0, 0, "", "mute", 1, 1);
    expect(((await snapshotOf(1)) as unknown[]).slice(0, 3)).toEqual(["e1", 2, 3]);
    expect(await remove(1, 12)).toEqual([0, 3, 3, "e1", 1]);
    expect(((await snapshotOf(1)) as unknown[]).slice(0, 3)).toEqual(["e1", 3, 3]);
    // 11 is read up: nothing listed, nothing moves.
    expect(await remove(1, 11)).toEqual([0, 3, 3, "e1", 0]);
  });
});

describe("inspect.lua", () => {
  it("returns everything stored for the user at once, the records as one list per field", async () => {
    expect(await redis.tallyInspect(...keysOf(1))).toEqual([-1]);
    await create(1, "e1", 10, 3, 1);
    const [meta, unread, seen, read, gone] = (await redis.tallyInspect(...keysOf(1))) as (string | number)[][];
    expect(meta).toEqual(expect.arrayContaining(["epoch", "e1", "total", "2"]));
    expect([unread, seen, read, gone]).toEqual([["10", 2], ["10", 3], ["10", 1], []]);
  });
});

describe("rebuild.lua", () => {
  it("creates state from the database's triples with version 1", async () => {
    expect(await create(1, "e1", 10, 5, 2, 11, 3, 3)).toEqual(["e1", 1, 3, "created"]);
    expect(await state(1)).toMatchObject({ meta: { total: "3", version: "1", epoch: "e1" }, unread: { "10": "3" } });
  });

  it("counts out the own messages above the cursor, moving the cursor over those right above it", async () => {
    // lastSeq 5, cursor 1, own messages 2 and 4 (a read that raced a send may leave the cursor right below one).
    await redis.tallyRebuild(...rebuildKeysOf(1), "e1", "merge", ...tuples([10, 5, 1]), "own", 10, 2, 10, 4);
    expect(await state(1)).toMatchObject({ meta: { total: "2" }, unread: { "10": "2" }, read: { "10": "2" } });
    // The same state as the live events build: others' 1, 3, 5 and own 2, 4.
    await create(2, "e1");
    for (const [seq, mine] of [
      [1, false],
      [2, true],
      [3, false],
      [4, true],
      [5, false],
    ] as const)
      await redis.tallyApply(...keysOf(2), 10, seq, 0, 0, 0, "", ...(mine ? (["own"] as const) : []));
    await apply(2, 10, 0, 1);
    expect(await redis.hgetall(userKeys(2, prefix).convs)).toEqual(await redis.hgetall(userKeys(1, prefix).convs));
    expect(await redis.zrange(userKeys(2, prefix).ment, "0", "-1")).toEqual(["0000000010:o0000000004"]);
    expect(await redis.zrange(userKeys(1, prefix).ment, "0", "-1")).toEqual(["0000000010:o0000000004"]);
  });

  it("merges into existing state without undoing later events, and changes nothing when nothing is new", async () => {
    await create(1, "e1", 10, 5, 2);
    await apply(1, 10, 8, 0); // an event applied after the rebuild read the database
    expect(await create(1, "e2", 10, 5, 2)).toEqual(["e1", 2, 6, "unchanged"]);
    expect(await create(1, "e3", 10, 8, 8, 11, 1, 0)).toEqual(["e3", 1, 1, "merged"]);
    expect(await state(1)).toMatchObject({ meta: { total: "1", epoch: "e3" }, unread: { "11": "1" } });
  });

  it("repairs stored sums that disagree with their parts, counting it and starting a new epoch, in either mode", async () => {
    await create(1, "e1", 10, 5, 2);
    await redis.hset(userKeys(1, prefix).meta, "total", 99);
    expect(await snapshotOf(1)).toEqual([-2]);
    expect(await create(1, "e2", 10, 5, 2)).toEqual(["e2", 1, 3, "merged"]);
    expect((await state(1)).meta).toMatchObject({ total: "3", repairs: "1" });
    expect((await snapshotOf(1)).slice(0, 3)).toEqual(["e2", 1, 3]);
    // Healthy state merged again: nothing written, nothing counted.
    expect(await create(1, "e3", 10, 5, 2)).toEqual(["e2", 1, 3, "unchanged"]);
    expect((await state(1)).meta.repairs).toBe("1");
    // The mentions' sum, and a replace.
    await redis.tallyApply(...keysOf(1), 10, 6, 0, 0, 0, "", "mention");
    await redis.hset(userKeys(1, prefix).meta, "mentions", 5);
    expect(await snapshotOf(1)).toEqual([-2]);
    expect(await redis.tallyRebuild(...rebuildKeysOf(1), "e4", "replace", ...tuples([10, 6, 2]))).toEqual([
      "e4",
      1,
      4,
      "replaced",
      0,
    ]);
    expect((await state(1)).meta).toMatchObject({ total: "4", mentions: "0", repairs: "2" });
  });

  it("replaces state that holds more than the database, which a merge cannot undo", async () => {
    await create(1, "e1", 10, 5, 2, 11, 4, 0);
    expect(await redis.tallyRebuild(...rebuildKeysOf(1), "e2", "replace", ...tuples([10, 5, 5]))).toEqual([
      "e2",
      1,
      0,
      "replaced",
      0,
    ]);
    expect(await state(1)).toMatchObject({ unread: {}, seen: { "10": "5" }, read: { "10": "5" } });
  });

  it("keeps a gone mark against a membership read before the departure committed, in every mode", async () => {
    await create(1, "e1", 10, 5, 2, 11, 1, 0);
    await redis.tallyRemove(...keysOf(1), 10);
    // A rebuild that read the memberships just before the leave committed still lists 10: it stays out.
    expect(await create(1, "e2", 10, 5, 2, 11, 1, 0)).toEqual(["e1", 2, 1, "unchanged"]);
    expect(await redis.tallyRebuild(...rebuildKeysOf(1), "e3", "replace", ...tuples([10, 5, 2, 11, 1, 0]))).toEqual([
      "e3",
      1,
      1,
      "replaced",
      0,
    ]);
    expect(await state(1)).toMatchObject({ unread: { "11": "1" }, gone: { "10": STAMPED } });
    // remove.lua on missing state still leaves the mark, and a fresh rebuild keeps it.
    expect(await remove(2, 20)).toEqual([-1]);
    expect(await create(2, "e1", 20, 3, 0, 21, 2, 0)).toEqual(["e1", 1, 2, "created"]);
    expect(await state(2)).toMatchObject({ unread: { "21": "2" }, gone: { "20": STAMPED } });
    expect(await apply(2, 20, 4, 0)).toEqual([0, 2, 1, "e1", 0]);
  });

  it("forgets and marks gone the conversations the database lists as left, so a late event cannot count them", async () => {
    const gone = (user: number, epoch: string, memberships: number[], ...left: number[]) =>
      redis.tallyRebuild(...rebuildKeysOf(user), epoch, "merge", ...tuples(memberships), "gone", ...left);
    // Missing state (a FLUSHALL took remove.lua's mark): created with the mark.
    expect((await gone(1, "e1", [10, 5, 2], 11)).slice(0, 4)).toEqual(["e1", 1, 3, "created"]);
    expect(await apply(1, 11, 4, 0)).toEqual([0, 3, 1, "e1", 0]);
    expect(await state(1)).toMatchObject({ unread: { "10": "3" }, seen: { "10": "5" }, gone: { "11": STAMPED } });
    // Existing state that still counts a left conversation (its removal not applied yet): it leaves the total.
    await create(2, "e1", 10, 5, 2, 11, 4, 0);
    await redis.tallyApply(...keysOf(2), 11, 4, 0, 0, 0, "", "mention");
    expect(await gone(2, "e2", [10, 5, 2], 11)).toEqual(["e2", 1, 3, "merged", 0]);
    expect(await state(2)).toMatchObject({ unread: { "10": "3" }, seen: { "10": "5" }, gone: { "11": STAMPED } });
    expect(await redis.exists(userKeys(2, prefix).ment)).toBe(0);
    // A departure wins over a membership listed with it (read just before the departure committed).
    expect((await gone(3, "e1", [11, 4, 0, 12, 1, 0], 11)).slice(0, 4)).toEqual(["e1", 1, 1, "created"]);
    expect(await state(3)).toMatchObject({ unread: { "12": "1" }, gone: { "11": STAMPED } });
    // With mentions before and expiry after it, the section still parses.
    await expect(
      redis.tallyRebuild(
        ...rebuildKeysOf(4),
        "e1",
        "merge",
        ...tuples([10, 5, 2]),
        "mentions",
        10,
        4,
        "gone",
        11,
        "ttl",
        0,
      ),
    ).resolves.toEqual(["e1", 1, 3, "created", 1]);
  });

  it("rejects malformed triples before writing", async () => {
    await expect(create(1, "e1", 10, 5)).rejects.toThrow(/tally rebuild/);
    await expect(redis.tallyRebuild(...rebuildKeysOf(1), "e1", "merge", "gone", "")).rejects.toThrow(/tally rebuild/);
    await expect(redis.tallyRebuild(...rebuildKeysOf(1), "e1", "other" as "merge")).rejects.toThrow(/tally rebuild/);
    expect(await redis.exists(...keysOf(1))).toBe(0);
  });
});

/** The registers one user holds for one conversation, merged as the scripts merge them (docs/consistency.md). */
interface Registers {
  seen: number;
  read: number;
  mentions: Set<number>;
  /** The user's own messages. */
  own: Set<number>;
  /** Others' messages deleted by their senders. */
  deleted: Set<number>;
  mute: [version: number, muted: number];
  mark: [version: number, at: number];
  cleared: number;
}
const noRegisters = (): Registers => ({
  seen: 0,
  read: 0,
  mentions: new Set(),
  own: new Set(),
  deleted: new Set(),
  mute: [0, 0],
  mark: [0, 0],
  cleared: 0,
});
const later = (a: [number, number], b: [number, number]) => (b[0] > a[0] || (b[0] === a[0] && b[1] > a[1]) ? b : a);

/** What the scripts must show for registers: the rule of docs/consistency.md, written independently. */
function derive(t: Registers) {
  // The cursor moves over the own messages right above it.
  let read = t.read;
  while (read < t.seen && t.own.has(read + 1)) read++;
  const mentions = [...t.mentions].filter((s) => s > read && s <= t.seen).length;
  const own = [...t.own].filter((s) => s > read && s <= t.seen).length;
  const deleted = [...t.deleted].filter((s) => s > read && s <= t.seen).length;
  const marked = t.mark[0] > t.cleared && read <= t.mark[1];
  const raw = Math.max(0, t.seen - read - own - deleted);
  const unread = raw === 0 && marked ? 1 : raw;
  const muted = t.mute[1] === 1;
  return { unread, mentions, muted, marked, effective: muted ? mentions : unread };
}

type Event = {
  user: number;
  conv: number;
  seen: number;
  read: number;
  mention?: boolean;
  own?: boolean;
  deleted?: boolean;
  mute?: [number, number];
  mark?: [number, number];
  clear?: number;
};

function applyEvent(e: Event) {
  const parts: (string | number)[] = [];
  if (e.mention) parts.push("mention");
  if (e.own) parts.push("own");
  if (e.deleted) parts.push("deleted");
  if (e.mute) parts.push("mute", ...e.mute);
  if (e.mark) parts.push("mark", ...e.mark);
  if (e.clear !== undefined) parts.push("clear", e.clear);
  return redis.tallyApply(...keysOf(e.user), e.conv, e.seen, e.read, 0, 0, "", ...(parts as ApplyPart[]));
}

/**
 * Random events over `count` conversations (ids from `first`), for the randomized comparisons below: 45% new
 * messages (a fifth the user's own, a tenth of the others mentioning), 30% reads, late or repeated, or views, 8%
 * mutes, 8% marks, 5% reads that clear a mark, and 4% `drift`: the caller writes something wrong from outside the
 * scripts.
 */
function randomEvents(r: ReturnType<typeof rng>, count: number, first: number) {
  const conversations = Array.from({ length: count }, (_, i) => first + i);
  const lastSeq = new Map<number, number>();
  const versions = new Map<number, { mute: number; mark: number }>();
  return (): Omit<Event, "user"> | { conv: number; drift: true } => {
    const c = r.pick(conversations);
    const last = lastSeq.get(c) ?? 0;
    const v = versions.get(c) ?? { mute: 0, mark: 0 };
    versions.set(c, v);
    const dice = r.int(0, 99);
    if (dice < 45) {
      lastSeq.set(c, last + 1);
      const own = r.chance(0.2);
      return { conv: c, seen: last + 1, read: 0, own, mention: !own && r.chance(0.1) };
    }
    if (dice < 75) return { conv: c, seen: r.int(0, last), read: r.int(0, last) };
    if (dice < 83) return { conv: c, seen: 0, read: 0, mute: [++v.mute, r.int(0, 1)] };
    if (dice < 91) return { conv: c, seen: 0, read: 0, mark: [++v.mark, last] };
    if (dice < 96) return { conv: c, seen: last, read: last, clear: r.int(0, v.mark) };
    return { conv: c, drift: true };
  };
}

describe("apply.lua's straight path", () => {
  it("leaves the same state and answers the same as the general path, event by event, drift included", async () => {
    // User 1 gets each event as it is; user 2 the same event with a `clear 0` part, which changes nothing but
    // sends it down the general path. Mentions, mutes and marks make the records the straight path meets varied,
    // and now and then both records are given the same drift (a wrong stored count, a mention count without any
    // mention pending), which both paths must carry alike.
    const seed = testSeed();
    const r = rng(seed);
    const next = randomEvents(r, 12, 200);
    await create(1, "e1");
    await create(2, "e1");
    const raw = async (user: number) => {
      const k = userKeys(user, prefix);
      const [{ term: _term, ...meta }, convs, ment] = await Promise.all([
        redis.hgetall(k.meta),
        redis.hgetall(k.convs),
        redis.zrange(k.ment, "0", "-1"),
      ]);
      // On a cluster the two users may live on different masters, each stamping its own term.
      return { meta, convs, ment };
    };
    let straight = 0;
    try {
      for (let op = 0; op < 3000; op++) {
        const event = next();
        if ("drift" in event) {
          const c = String(event.conv);
          const stored = parseRecord(await redis.hget(userKeys(1, prefix).convs, c));
          const drift = r.chance(0.5) ? { unread: stored.unread + r.int(1, 3) } : { mentions: r.int(1, 2) };
          for (const user of [1, 2])
            await redis.hset(userKeys(user, prefix).convs, c, formatRecord({ ...stored, ...drift }));
          continue;
        }
        const plain = !event.mention && !event.mute && !event.mark && event.clear === undefined;
        if (plain) straight++;
        const first = await applyEvent({ ...event, user: 1 });
        const second = await applyEvent({ ...event, user: 2, ...(plain ? { clear: 0 } : {}) });
        expect(first, `event ${op}: ${JSON.stringify(event)}`).toEqual(second);
        if (op % 50 === 0) expect(await raw(1), `after event ${op}`).toEqual(await raw(2));
      }
      expect(await raw(1)).toEqual(await raw(2));
      expect(straight).toBeGreaterThan(1000);
    } catch (err) {
      console.error(`straight-path test failed; replay with TEST_SEED=${seed}`);
      throw err;
    }
  });
});

/** A snapshot read with its counts sorted by conversation, to compare two readers. */
function normalised(read: SnapshotRead | null): unknown {
  if (read === null || typeof read === "number") return read;
  return { ...read, counts: [...read.counts].sort(([a], [b]) => a - b) };
}

describe("a plain snapshot (readPlainSnapshot)", () => {
  it("answers as snapshot.lua does for the same state, drift included, and defers to it for fenced state", async () => {
    // Random events (mentions, mutes, marks, clears), now and then a record or a stored sum written wrong from
    // outside the scripts; after every ten, both readers of the same state must agree exactly.
    const seed = testSeed();
    const r = rng(seed);
    const next = randomEvents(r, 15, 300);
    const k = userKeys(1, prefix);
    // The service's own read: one MULTI (with INFO on a cluster), then snapshotOfRecords.
    const plain = () => readPlainSnapshot(redis, keysOf(1));
    expect(await plain()).toBe(-1);
    await create(1, "e1");
    const seen = { drift: 0, listed: 0 };
    try {
      for (let op = 0; op < 1500; op++) {
        const event = next();
        if (!("drift" in event)) await applyEvent({ ...event, user: 1 });
        else if (r.chance(0.5)) {
          const stored = parseRecord(await redis.hget(k.convs, String(event.conv)));
          const drift = r.chance(0.5) ? { unread: stored.unread + r.int(1, 3) } : { mentions: stored.mentions + 1 };
          await redis.hset(k.convs, String(event.conv), formatRecord({ ...stored, ...drift }));
        } else await redis.hincrby(k.meta, r.chance(0.5) ? "total" : "mentions", r.chance(0.5) ? 1 : -1);
        if (op % 10 !== 0) continue;
        const [ours, script] = [await plain(), await snapshotOf(1)];
        expect(normalised(ours), `after event ${op}`).toEqual(normalised(readOfReply(script)));
        if (script.length === 1) {
          seen.drift++;
          await create(1, "e1"); // rebuild.lua repairs the sums from the records (a merge with nothing new)
        } else seen.listed += (script.length - 5) / 5;
      }
    } catch (err) {
      console.error(`plain snapshot test failed; replay with TEST_SEED=${seed}`);
      throw err;
    }
    // Both kinds of answer were compared, not only one.
    expect(seen.drift).toBeGreaterThan(3);
    expect(seen.listed).toBeGreaterThan(100);

    // State stamped by another term, or written before stamps: only the script can tell, so the plain read defers.
    const [meta, records] = [await redis.hmget(k.meta, ...SNAPSHOT_META_FIELDS), await redis.hgetall(k.convs)];
    expect(snapshotOfRecords([...meta.slice(0, 4), "another-term"], records, "this-term")).toBeNull();
    expect(snapshotOfRecords([...meta.slice(0, 4), null], records, null)).toBeNull();
    expect(snapshotOfRecords([null, null, null, null, null], {}, null)).toBe(-1);
  });
});

describe.runIf(!isClusterTarget(inject("redisTarget")))("deliver.lua (one redis-server)", () => {
  let subscriber: RedisClient;
  const received: string[] = [];
  let arrived: () => void = () => {};
  beforeAll(async () => {
    subscriber = createRedis(inject("redisTarget"));
    subscriber.on("message", (_channel: string, payload: string) => {
      received.push(payload);
      arrived();
    });
  });
  afterAll(() => subscriber.quit());
  /** The next payload published on the channel (in publication order). */
  const nextPayload = async () => {
    while (received.length === 0) await new Promise<void>((resolve) => (arrived = resolve));
    return received.shift()!;
  };
  type Plain = { conv: number; seen: number; read: number; mention?: boolean };
  const deliverOn = (client: RedisClient, channel: string, head: string, members: [number, Plain][]) =>
    client.tallyDeliver(
      members.length * 5,
      ...members.flatMap(([user]) => keysOf(user)),
      channel,
      head,
      ...members.flatMap(([, e]) => [e.conv, e.seen, e.read, 0, 0, "", e.mention ? "mention" : ""]),
    );
  /** deliver.lua's replies, after checking that it published. */
  const deliver = async (channel: string, head: string, members: [number, Plain][]) => {
    const [published, ...replies] = await deliverOn(redis, channel, head, members);
    expect(published).toBe(1);
    return replies;
  };

  it("applies each member's event as apply.lua does, and publishes the head and every reply once", async () => {
    // Users 1 and 2 get each event through deliver.lua, users 3 and 4 through apply.lua: the same replies, the
    // same state, and one publication per call carrying exactly the replies.
    const channel = `${prefix}deliveries`;
    await subscriber.subscribe(channel);
    expect(received).toEqual([]);
    const r = rng(testSeed());
    for (const user of [1, 2, 3, 4]) await create(user, "e1");
    const lastSeq = new Map<number, number>();
    for (let op = 0; op < 400; op++) {
      const c = 300 + r.int(0, 5);
      const last = lastSeq.get(c) ?? 0;
      let events: [Plain, Plain];
      if (r.chance(0.6)) {
        lastSeq.set(c, last + 1); // a message from the first member: their cursor moves with it
        events = [
          { conv: c, seen: last + 1, read: last + 1 },
          { conv: c, seen: last + 1, read: 0, mention: r.chance(0.2) },
        ];
      } else {
        events = [
          { conv: c, seen: r.int(0, last), read: r.int(0, last) },
          { conv: c, seen: r.int(0, last), read: r.int(0, last) },
        ];
      }
      const head = `{"op":${op}}\n`;
      const replies = await deliver(channel, head, [
        [1, events[0]],
        [2, events[1]],
      ]);
      const one = await Promise.all([
        redis.tallyApply(...keysOf(3), events[0].conv, events[0].seen, events[0].read),
        events[1].mention
          ? redis.tallyApply(...keysOf(4), events[1].conv, events[1].seen, events[1].read, 0, 0, "", "mention")
          : redis.tallyApply(...keysOf(4), events[1].conv, events[1].seen, events[1].read),
      ]);
      expect(replies, `event ${op}`).toEqual(one);
      expect(await nextPayload()).toBe(`${head}${JSON.stringify(replies)}`);
    }
    for (const [a, b] of [
      [1, 3],
      [2, 4],
    ] as const) {
      expect(await redis.hgetall(userKeys(a, prefix).convs)).toEqual(await redis.hgetall(userKeys(b, prefix).convs));
      const { term: _a, ...metaA } = await redis.hgetall(userKeys(a, prefix).meta);
      const { term: _b, ...metaB } = await redis.hgetall(userKeys(b, prefix).meta);
      expect(metaA).toEqual(metaB);
    }
  });

  it("publishes nothing when a member's state is missing, and still applies the others", async () => {
    const channel = `${prefix}deliveries`;
    await subscriber.subscribe(channel);
    await create(5, "e1");
    const replies = await deliverOn(redis, channel, "first\n", [
      [5, { conv: 10, seen: 1, read: 0 }],
      [6, { conv: 10, seen: 1, read: 0 }],
    ]);
    expect(replies).toEqual([0, [1, 1, 2, "e1", 1, 0, 0, 0, 0], [-1]]);
    expect(await redis.exists(...keysOf(6))).toBe(0);
    await create(6, "e1");
    await deliver(channel, "second\n", [[6, { conv: 10, seen: 1, read: 0 }]]);
    // Publications arrive in order: the first call's would come before this one.
    expect(await nextPayload()).toBe(`second\n${JSON.stringify([[1, 1, 2, "e1", 1, 0, 0, 0, 0]])}`);
  });

  it("applies every member and answers published 0 when the PUBLISH is refused (an ACL without the channel)", async () => {
    const channel = `${prefix}deliveries`;
    const user = `${prefix}nochannel`;
    // A user of this test's own redis-server that may run every command on every key, and publish on no channel.
    await redis.call("ACL", "SETUSER", user, "on", "nopass", "~*", "resetchannels", "+@all");
    const limited = createRedis(inject("redisTarget"), { username: user, password: "x" });
    try {
      await create(7, "e1");
      expect(await deliverOn(limited, channel, "refused\n", [[7, { conv: 10, seen: 2, read: 0 }]])).toEqual([
        0,
        [2, 2, 2, "e1", 1, 0, 0, 0, 0],
      ]);
    } finally {
      await limited.quit();
      await redis.call("ACL", "DELUSER", user);
    }
  });
});

describe("replication fencing (includes/fence.lua)", () => {
  const termOf = (user: number) => replicationTerm(redis, userKeys(user, prefix).meta);

  const onCluster = () => isClusterTarget(inject("redisTarget"));

  it("stamps new state with its master's replication id on a cluster, and '-' (never checked) on a single Redis", async () => {
    await create(1, "e1", 10, 3, 1);
    const stamp = await redis.hget(userKeys(1, prefix).meta, "term");
    expect(stamp).toBe(onCluster() ? await termOf(1) : "-");
  });

  it("treats state written under another term as missing: nothing answers from it, and only a rebuild that read the database after seeing the term replaces it", async () => {
    // As a promoted replica finds it: the old master's stamp, and without the last events that master applied.
    await create(1, "e1", 10, 5, 2, 11, 3, 0);
    await redis.tallyRemove(...keysOf(1), 12);
    await redis.hset(userKeys(1, prefix).meta, "term", "0123456789abcdef0123456789abcdef01234567");
    const before = await redis.hgetall(userKeys(1, prefix).convs);
    expect(await apply(1, 10, 9, 0)).toEqual([-1]);
    expect(await snapshotOf(1)).toEqual([-1]);
    expect(await redis.tallyInspect(...keysOf(1))).toEqual([-1]);
    // remove.lua only leaves its gone mark, as on missing state.
    expect(await remove(1, 11)).toEqual([-1]);
    expect(await redis.hgetall(userKeys(1, prefix).convs)).toEqual(before);
    expect(await redis.hgetall(userKeys(1, prefix).gone)).toEqual({ "11": STAMPED, "12": STAMPED });
    // A rebuild whose database read may predate the promotion writes nothing and names the term.
    const term = onCluster() ? await termOf(1) : "-";
    const tuples13 = tuples([10, 9, 9, 11, 3, 0, 13, 1, 0]);
    expect(await redis.tallyRebuild(...rebuildKeysOf(1), "e2", "merge", ...tuples13)).toEqual([
      "",
      0,
      0,
      "fenced",
      0,
      term,
    ]);
    expect(await redis.hget(userKeys(1, prefix).meta, "epoch")).toBe("e1");
    // With it, the database's truth is written over the copy (a merge would keep a register the truth no longer has).
    expect(
      (await redis.tallyRebuild(...rebuildKeysOf(1), "e2", "merge", "term", term, ...tuples13)).slice(0, 4),
    ).toEqual(["e2", 1, 1, "replaced"]);
    expect(await state(1)).toMatchObject({
      meta: { epoch: "e2", version: "1", total: "1" },
      unread: { "13": "1" },
      seen: { "10": "9", "13": "1" },
      gone: { "11": STAMPED, "12": STAMPED },
    });
    expect(await redis.hget(userKeys(1, prefix).meta, "term")).toBe(onCluster() ? term : "-");
    expect(await apply(1, 13, 2, 0)).toEqual([2, 2, 2, "e2", 1]);
  });

  it("writes state from scratch only for the ticket the meta still holds, taken before the database read", async () => {
    const meta = userKeys(1, prefix).meta;
    const rebuild = (ticket: string, mode: "merge" | "replace", ...triples: number[]) =>
      redis.tallyRebuild(...rebuildKeysOf(1), "e", mode, "ticket", ticket, ...tuples(triples));
    const term = onCluster() ? await termOf(1) : "-";
    // Concurrent rebuilds share the first ticket, stamped with the node's term; it stays in the meta.
    const [t1, t3] = [`${term}/t1`, `${term}/t3`];
    expect(await redis.tallyTicket(meta, "t1")).toBe(t1);
    expect(await redis.tallyTicket(meta, "t2")).toBe(t1);
    expect(await redis.hget(meta, "epoch")).toBeNull(); // a ticket alone is no state
    expect(await apply(1, 10, 5, 0)).toEqual([-1]);
    // Redis lost the keys after the read that took t1: nothing written, read again.
    await redis.del(meta);
    expect(await rebuild(t1, "merge", 10, 5, 2)).toEqual(["", 0, 0, "fenced", 0, term]);
    expect(await redis.exists(...keysOf(1))).toBe(0);
    expect(await redis.tallyTicket(meta, "t3")).toBe(t3);
    expect((await rebuild(t3, "merge", 10, 5, 2)).slice(0, 4)).toEqual(["e", 1, 3, "created"]);
    // Merging into state that exists needs no ticket: a stale read cannot undo what a merge keeps.
    expect((await rebuild(t1, "merge", 10, 4, 2)).slice(0, 4)).toEqual(["e", 1, 3, "unchanged"]);
    // A replace writes from scratch: it too needs the ticket the meta holds.
    expect(await rebuild(t1, "replace", 10, 4, 2)).toEqual(["", 0, 0, "fenced", 0, term]);
    expect((await rebuild(t3, "replace", 10, 4, 2)).slice(0, 4)).toEqual(["e", 1, 2, "replaced"]);
    // A promoted replica may hold a ticket without the state written under it: one of another term counts for
    // nothing, and the next rebuild gets a ticket of its own.
    await redis.del(...keysOf(1));
    const foreign = "0123456789abcdef0123456789abcdef01234567/t1";
    await redis.hset(meta, "ticket", foreign);
    expect(await rebuild(foreign, "merge", 10, 5, 2)).toEqual(["", 0, 0, "fenced", 0, term]);
    expect(await redis.tallyTicket(meta, "t4")).toBe(`${term}/t4`);
    // What a retry after "fenced" sends: the term, then the ticket.
    expect(
      (
        await redis.tallyRebuild(
          ...rebuildKeysOf(1),
          "e",
          "merge",
          "term",
          term,
          "ticket",
          `${term}/t4`,
          ...tuples([10, 5, 2]),
        )
      ).slice(0, 4),
    ).toEqual(["e", 1, 3, "created"]);
    await expect(redis.tallyRebuild(...rebuildKeysOf(1), "e", "merge", "ticket", "")).rejects.toThrow("bad ticket");
  });

  it("fences state written before stamps existed on a cluster node, and not on a single Redis", async () => {
    await create(1, "e1", 10, 3, 1);
    await redis.hdel(userKeys(1, prefix).meta, "term");
    expect(await apply(1, 10, 4, 1)).toEqual(onCluster() ? [-1] : [3, 3, 2, "e1", 1]);
  });
});

describe("mute, mentions and mark as unread", () => {
  const full = (user: number, conv: number, seen: number, read: number, ...parts: ApplyPart[]) =>
    redis.tallyApply(...keysOf(user), conv, seen, read, 0, 0, "", ...parts);

  it("a muted conversation keeps its count but only its mentions reach the total, in one version step", async () => {
    await create(1, "e1", 10, 3, 0, 11, 2, 0);
    expect(await full(1, 10, 4, 0, "mention")).toEqual([4, 6, 2, "e1", 1, 1, 1, 0, 0]);
    expect(await full(1, 10, 0, 0, "mute", 1, 1)).toEqual([4, 3, 3, "e1", 1, 1, 1, 1, 0]);
    // A replayed mute, and an older unmute arriving late, change nothing.
    expect(await full(1, 10, 0, 0, "mute", 1, 1)).toEqual([4, 3, 3, "e1", 0, 1, 1, 1, 0]);
    expect(await full(1, 10, 0, 0, "mute", 0, 0)).toEqual([4, 3, 3, "e1", 0, 1, 1, 1, 0]);
    expect(await full(1, 10, 0, 0, "mute", 2, 0)).toEqual([4, 6, 4, "e1", 1, 1, 1, 0, 0]);
  });

  it("counts a mention until the cursor passes it, and never for a message already read", async () => {
    await create(1, "e1", 10, 2, 2);
    expect(await full(1, 10, 2, 0, "mention")).toEqual([0, 0, 1, "e1", 0, 0, 0, 0, 0]);
    expect(await full(1, 10, 3, 0, "mention")).toEqual([1, 1, 2, "e1", 1, 1, 1, 0, 0]);
    expect(await full(1, 10, 4, 0)).toEqual([2, 2, 3, "e1", 1, 1, 1, 0, 0]);
    expect(await full(1, 10, 4, 3)).toEqual([1, 1, 4, "e1", 1, 0, 0, 0, 0]);
    expect(await redis.zcard(userKeys(1, prefix).ment)).toBe(0); // a mention at or below the cursor is dropped
  });

  it("a mark shows 1 until a read reaches the last message naming it, or a new message is read; a stale read does not clear it", async () => {
    await create(1, "e1", 10, 5, 5);
    expect(await full(1, 10, 0, 0, "mark", 1, 5)).toEqual([1, 1, 2, "e1", 1, 0, 0, 0, 1]);
    // A read of the same seq that names no mark (sent before the tab saw it) leaves it.
    expect(await full(1, 10, 5, 5, "clear", 0)).toEqual([1, 1, 2, "e1", 0, 0, 0, 0, 1]);
    expect(await full(1, 10, 5, 5, "clear", 1)).toEqual([0, 0, 3, "e1", 1, 0, 0, 0, 0]);
    // Marked again, then a new message arrives (1 unread either way: nothing to push) and is read: the cursor
    // passed the mark.
    expect(await full(1, 10, 0, 0, "mark", 2, 5)).toEqual([1, 1, 4, "e1", 1, 0, 0, 0, 2]);
    expect(await full(1, 10, 6, 0)).toEqual([1, 1, 4, "e1", 0, 0, 0, 0, 2]);
    expect(await full(1, 10, 6, 6)).toEqual([0, 0, 5, "e1", 1, 0, 0, 0, 0]);
  });

  it("a clear that reaches Redis before its mark still ends cleared", async () => {
    await create(1, "e1", 10, 5, 5);
    await full(1, 10, 5, 5, "clear", 1);
    expect(await full(1, 10, 0, 0, "mark", 1, 5)).toEqual([0, 0, 1, "e1", 0, 0, 0, 0, 0]);
  });

  it("rebuilds registers and mentions from the database to the state live applies reach, and removes them", async () => {
    await create(1, "e1", 10, 0, 0, 11, 0, 0);
    for (const seq of [1, 2, 3]) await full(1, 10, seq, 0, ...(seq !== 2 ? (["mention"] as const) : []));
    await full(1, 10, 0, 0, "mute", 1, 1);
    await full(1, 11, 1, 1);
    await full(1, 11, 0, 0, "mark", 1, 1);
    const live = await snapshotOf(1);
    // Conversation 10: 3 unread, 2 mentions, muted (2 reach the total); 11: marked, so 1.
    expect(live.slice(2)).toEqual([3, 2, 0, "10", 3, 2, 1, 0, "11", 1, 0, 0, 1]);
    const database = [10, 3, 0, 1, 1, 0, 0, 0, 11, 1, 1, 0, 0, 1, 1, 0, "mentions", 10, 1, 10, 3];
    expect(await redis.tallyRebuild(...rebuildKeysOf(2), "e2", "merge", ...database)).toEqual([
      "e2",
      1,
      3,
      "created",
      2,
    ]);
    expect((await snapshotOf(2)).slice(2)).toEqual(live.slice(2));
    expect(await redis.tallyRebuild(...rebuildKeysOf(1), "e3", "merge", ...database)).toEqual([
      "e1",
      6,
      3,
      "unchanged",
      2,
    ]);
    expect(await redis.tallyRemove(...keysOf(1), 10)).toEqual([0, 1, 7, "e1", 1, 0, 0, 0, 0]);
    expect((await snapshotOf(1)).slice(2)).toEqual([1, 0, 0, "11", 1, 0, 0, 1]);
    expect(await redis.zcard(userKeys(1, prefix).ment)).toBe(0);
  });

  it("rebuilds deleted messages to the state live applies reach, and a merge from before a deletion takes its mention out", async () => {
    // Others' 1, 2 (mentions the user), 3 (mentions the user), 4; 2 and 4 deleted; cursor at 0.
    await create(1, "e1", 10, 0, 0);
    await full(1, 10, 1, 0);
    await full(1, 10, 2, 0, "mention");
    await full(1, 10, 3, 0, "mention");
    await full(1, 10, 4, 0);
    await full(1, 10, 2, 0, "deleted");
    await full(1, 10, 4, 0, "deleted");
    const live = await snapshotOf(1);
    expect(live.slice(2)).toEqual([2, 1, 0, "10", 2, 1, 0, 0]);
    const database = [10, 4, 0, 0, 0, 0, 0, 0, "mentions", 10, 3, "deleted", 10, 2, 10, 4];
    expect(await redis.tallyRebuild(...rebuildKeysOf(2), "e2", "merge", ...database)).toEqual([
      "e2",
      1,
      2,
      "created",
      1,
    ]);
    expect((await snapshotOf(2)).slice(2)).toEqual(live.slice(2));
    // User 3's Redis heard message 2 with its mention, and not yet its deletion; a rebuild that read the database
    // after the deletion merges it: the mention goes with the message.
    await create(3, "e1", 10, 0, 0);
    await full(3, 10, 2, 0, "mention");
    await redis.tallyRebuild(...rebuildKeysOf(3), "e3", "merge", ...database);
    expect((await snapshotOf(3)).slice(2)).toEqual(live.slice(2));
    expect(await redis.zrange(userKeys(3, prefix).ment, "0", "-1")).toEqual([
      "0000000010:0000000003",
      "0000000010:d0000000002",
      "0000000010:d0000000004",
    ]);
    // And one that read the database before the deletion (with 2's mention) does not bring it back.
    const before = [10, 4, 0, 0, 0, 0, 0, 0, "mentions", 10, 2, 10, 3, "deleted", 10, 4];
    expect((await redis.tallyRebuild(...rebuildKeysOf(1), "e4", "merge", ...before))[3]).toBe("unchanged");
    expect((await snapshotOf(1)).slice(2)).toEqual(live.slice(2));
  });

  it("rejects malformed parts before writing anything", async () => {
    await create(1, "e1", 10, 1, 0);
    const before = await state(1);
    for (const parts of [["mute", 1, 2], ["mark", -1, 0], ["clear"], ["loud"], ["mute", 1]] as ApplyPart[][])
      await expect(full(1, 10, 1, 0, ...parts), JSON.stringify(parts)).rejects.toThrow(/tally apply/);
    await expect(full(1, 10, 0, 0, "mention")).rejects.toThrow(/tally apply/); // a mention needs its message
    expect(await state(1)).toEqual(before);
  });
});

describe("randomized: total == Σ effective and totalMentions == Σ mentions", () => {
  it("holds after every one of 10,000 events (messages that mention, deletions, reads that clear marks, mutes, marks) over many conversations, delivered late, twice and out of order", async () => {
    const seed = testSeed();
    const r = rng(seed);
    const users = [1, 2, 3];
    const conversations = Array.from({ length: 40 }, (_, i) => 100 + i);
    // The database: each conversation's lastSeq, each membership's registers as the statements write them.
    const lastSeq = new Map<number, number>();
    const db = new Map<
      string,
      {
        read: number;
        /** The user's own messages: the cursor moves over them (the truth's overOwn). */
        own: Set<number>;
        mute: [number, number];
        mark: [number, number];
        cleared: number;
      }
    >();
    const dbOf = (u: number, c: number) => {
      const key = `${u}:${c}`;
      if (!db.has(key)) db.set(key, { read: 0, own: new Set(), mute: [0, 0], mark: [0, 0], cleared: 0 });
      return db.get(key)!;
    };
    // Redis as it must be: the merge of every event delivered so far.
    const merged = new Map<string, Registers>();
    for (const u of users) await create(u, "e1");
    const pending: Event[] = [];
    const counts = { mentions: 0, mutes: 0, marks: 0, clears: 0, ownAbove: 0, deletions: 0 };
    /** Per conversation, the seqs each user sent (a deletion is of someone else's message, for this user). */
    const sentBy = new Map<string, Set<number>>();
    try {
      for (let op = 0; op < 10_000; op++) {
        const u = r.pick(users);
        const c = r.pick(conversations);
        const m = dbOf(u, c);
        const last = lastSeq.get(c) ?? 0;
        let event: Event;
        const dice = r.int(0, 99);
        if (pending.length > 0 && r.chance(0.3)) {
          event = pending.splice(r.int(0, pending.length - 1), 1)[0]!; // a late or repeated delivery
        } else if (dice >= 45 && dice < 50 && last > 0 && !sentBy.get(`${u}:${c}`)?.has(last)) {
          // Its sender deletes a message of someone else's: it never counts for this user, nor does its mention; it
          // moves no cursor.
          // Half the time one whose message event is still on its way (held back), so the deletion lands first.
          const held = pending.filter((e) => e.user === u && e.conv === c && e.seen > 0 && !e.own && !e.deleted);
          let seq = held.length > 0 && r.chance(0.5) ? r.pick(held).seen : r.int(1, last);
          if (sentBy.get(`${u}:${c}`)?.has(seq)) seq = last;
          counts.deletions++;
          event = { user: u, conv: c, seen: seq, read: 0, deleted: true };
        } else if (dice < 50) {
          const seq = last + 1;
          lastSeq.set(c, seq);
          // The send statement moves the sender's cursor over their message only from right below it.
          const own = r.chance(0.2);
          if (own) {
            if (!sentBy.has(`${u}:${c}`)) sentBy.set(`${u}:${c}`, new Set());
            sentBy.get(`${u}:${c}`)!.add(seq);
            m.own.add(seq);
            if (m.read === seq - 1) m.read = seq;
            else counts.ownAbove++;
          }
          const mention = !own && r.chance(0.3);
          if (mention) counts.mentions++;
          event = { user: u, conv: c, seen: seq, read: 0, own, mention };
        } else if (dice < 80) {
          // A read, maybe naming a mark (the one the tab shows, or an older one): clears only at the last message.
          m.read = Math.max(m.read, r.int(0, last));
          while (m.own.has(m.read + 1)) m.read++;
          const named = r.int(0, m.mark[0]);
          if (m.read >= last && named > 0) m.cleared = Math.max(m.cleared, Math.min(named, m.mark[0]));
          if (m.cleared > 0) counts.clears++;
          event = { user: u, conv: c, seen: last, read: m.read, clear: m.cleared };
        } else if (dice < 90) {
          m.mute = [m.mute[0] + 1, r.chance(0.5) ? 1 : 0];
          counts.mutes++;
          event = { user: u, conv: c, seen: 0, read: 0, mute: m.mute };
        } else {
          m.mark = [m.mark[0] + 1, last];
          counts.marks++;
          event = { user: u, conv: c, seen: 0, read: 0, mark: m.mark };
        }
        if (r.chance(0.2)) pending.push(event);

        const key = `${event.user}:${event.conv}`;
        const t = merged.get(key) ?? noRegisters();
        t.seen = Math.max(t.seen, event.seen);
        t.read = Math.max(t.read, event.read);
        // A mention of a message deleted already is not taken; a deletion takes its mention away.
        if (event.mention && !t.deleted.has(event.seen)) t.mentions.add(event.seen);
        if (event.own) t.own.add(event.seen);
        if (event.deleted) {
          t.deleted.add(event.seen);
          t.mentions.delete(event.seen);
        }
        if (event.mute) t.mute = later(t.mute, event.mute);
        if (event.mark) t.mark = later(t.mark, event.mark);
        if (event.clear !== undefined) t.cleared = Math.max(t.cleared, event.clear);
        merged.set(key, t);

        const reply = await applyEvent(event);
        if (reply.length === 1) throw new Error("state missing");
        const mine = [...merged.entries()].filter(([k]) => k.startsWith(`${event.user}:`)).map(([, v]) => derive(v));
        const d = derive(t);
        expect(reply[0], `unread after op ${op}`).toBe(d.unread);
        expect(reply[5], `mentions after op ${op}`).toBe(d.mentions);
        expect([reply[7], reply[8] > 0], `muted, marked after op ${op}`).toEqual([d.muted ? 1 : 0, d.marked]);
        expect(reply[1], `total after op ${op}`).toBe(mine.reduce((sum, v) => sum + v.effective, 0));
        expect(reply[6], `totalMentions after op ${op}`).toBe(mine.reduce((sum, v) => sum + v.mentions, 0));
        if (op % 500 === 0) await checkSums();
      }
      // Every delivery that was held back arrives in the end: Redis then holds the database's registers, the read
      // cursor included, though the events came in another order than the statements ran.
      for (const e of pending) await applyEvent(e);
      await checkSums();
      for (const u of users) {
        const { read } = await state(u);
        for (const c of conversations) expect(Number(read[c] ?? 0), `user ${u} #${c} cursor`).toBe(dbOf(u, c).read);
      }
      for (const u of users) {
        const reply = await snapshotOf(u);
        const shown = new Map<number, unknown>();
        const rest = reply.slice(5);
        for (let i = 0; i + 4 < rest.length; i += 5)
          shown.set(Number(rest[i]), [rest[i + 1], rest[i + 2], rest[i + 3], Number(rest[i + 4]) > 0]);
        for (const c of conversations) {
          const d = derive(merged.get(`${u}:${c}`) ?? noRegisters());
          const expected = [d.unread, d.mentions, d.muted ? 1 : 0, d.marked];
          expect(shown.get(c) ?? [0, 0, 0, false], `user ${u} conversation ${c}`).toEqual(expected);
        }
      }
      // The mix really exercised every kind of event.
      for (const [kind, n] of Object.entries(counts)) expect(n, kind).toBeGreaterThan(100);
    } catch (err) {
      console.error(`randomized script test failed; replay with TEST_SEED=${seed}`);
      throw err;
    }

    async function checkSums() {
      for (const u of users) {
        const { meta, unread, mcount, state: st } = await state(u);
        const muted = (c: string) => st[c]?.split(":")[1] === "1";
        const convs = new Set([...Object.keys(unread), ...Object.keys(mcount)]);
        const total = [...convs].reduce((sum, c) => sum + Number(muted(c) ? (mcount[c] ?? 0) : (unread[c] ?? 0)), 0);
        const mentions = Object.values(mcount).reduce((sum, v) => sum + Number(v), 0);
        expect([Number(meta.total), Number(meta.mentions ?? 0)], `user ${u}: sums`).toEqual([total, mentions]);
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
    const [s, times] = await Promise.all([
      state(user),
      redis.zrange(userKeys(user, prefix).times, "0", "-1", "WITHSCORES"),
    ]);
    return { ...s, times };
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
        await redis.tallyRebuild(
          ...rebuildKeysOf(user),
          epoch,
          "merge",
          ...tuples(triples),
          "ttl",
          HOUR,
          "now",
          now,
          ...rest,
        )
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

  it("rebuilds the same state whatever the order of its message triples, past a ZADD batch of them", async () => {
    // 1600 fresh messages of conversation 10 and an expired one among them (1550): listed after the fresh ones, it
    // finds 600 of them still held back for one ZADD (rebuild.lua adds them a thousand at a time), and those at or
    // below it must go as the others do.
    const old = T0 - 2 * HOUR;
    const fresh = [
      ...Array.from({ length: 1500 }, (_, i) => i + 1),
      ...Array.from({ length: 100 }, (_, i) => 1601 + i),
    ];
    const triples = fresh.flatMap((seq) => [10, seq, T0]);
    const rebuild = (user: number, ...messages: number[]) =>
      redis.tallyRebuild(
        ...rebuildKeysOf(user),
        "e1",
        "merge",
        ...tuples([10, 1700, 0]),
        "ttl",
        HOUR,
        "now",
        T0,
        messages,
      );
    await rebuild(1, ...triples, 10, 1550, old);
    await rebuild(2, 10, 1550, old, ...triples);
    const [first, second] = [await full(1), await full(2)];
    expect(first).toEqual(second);
    expect(first).toMatchObject({ unread: { "10": "150" }, aged: { "10": "1550" } });
    expect(first.times.filter((_, i) => i % 2 === 0)).toEqual(
      fresh.filter((seq) => seq > 1550).map((seq) => `0000000010:${String(seq).padStart(10, "0")}`),
    );
  });

  it("rejects malformed message triples and instants before writing", async () => {
    await expect(
      redis.tallyRebuild(...rebuildKeysOf(1), "e1", "merge", ...tuples([10, 2, 0]), "ttl", HOUR, 10, 1),
    ).rejects.toThrow(/tally rebuild/);
    await expect(
      redis.tallyRebuild(
        ...rebuildKeysOf(1),
        "e1",
        "merge",
        ...tuples([10, 2, 0]),
        "ttl",
        HOUR,
        "now",
        "soon",
        10,
        1,
        T0,
      ),
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
    expect([unread, aged, now, expired]).toEqual([[], ["10", 1], PAST, 1]);
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
