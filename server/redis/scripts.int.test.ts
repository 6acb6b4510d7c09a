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
const apply = (user: number, conv: number, seen: number, read: number) =>
  redis.tallyApply(...keysOf(user), conv, seen, read);
const create = (user: number, epoch: string, ...triples: number[]) =>
  redis.tallyRebuild(...keysOf(user), epoch, ...triples);

async function state(user: number) {
  const k = userKeys(user, prefix);
  const [meta, unread, seen, read] = await Promise.all([
    redis.hgetall(k.meta),
    redis.hgetall(k.unread),
    redis.hgetall(k.seen),
    redis.hgetall(k.read),
  ]);
  return { meta, unread, seen, read };
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
      meta: { total: "4", version: "3", epoch: "e1" },
      unread: { "10": "1", "11": "3" },
      seen: { "10": "1", "11": "3" },
      read: {},
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
    expect(await redis.tallySnapshot(...(keysOf(1).slice(0, 2) as [string, string]))).toEqual([-1]);
    await create(1, "e9", 10, 4, 1, 11, 2, 2, 12, 7, 0);
    const reply = await redis.tallySnapshot(...(keysOf(1).slice(0, 2) as [string, string]));
    expect(reply.slice(0, 3)).toEqual(["e9", 1, 10]);
    const counts = Object.fromEntries(
      (reply.slice(3) as string[]).flatMap((v, i, all) => (i % 2 === 0 ? [[v, all[i + 1]]] : [])),
    );
    expect(counts).toEqual({ "10": "3", "12": "7" });
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
    expect(await create(1, "e2", 10, 5, 2)).toEqual(["e2", 1, 3, "merged"]);
  });

  it("rejects malformed triples before writing", async () => {
    await expect(create(1, "e1", 10, 5)).rejects.toThrow(/tally rebuild/);
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
