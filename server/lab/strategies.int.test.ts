import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import type { LabSample } from "../contracts/lab.ts";
import { userLockKey } from "../redis/keys.ts";
import { createRedis, type RedisClient } from "../redis/client.ts";
import { deleteKeys, openLabRedis, type LabRedis } from "./lab-redis.ts";
import { acquireLock, releaseLock, startWatchdog, type Every } from "./lock.ts";
import { wrongOf } from "./measure.ts";
import { resolveWorkload } from "./params.ts";
import { runStrategy } from "./runner.ts";
import { createLabConnection } from "./scripts.ts";
import { replayStory } from "./story.ts";

let redis: Redis;
let app: RedisClient;
let shared: LabRedis;
let privateRedis: LabRedis;
const prefix = () => `lab:t${randomBytes(4).toString("hex")}:`;

beforeAll(async () => {
  redis = await createLabConnection(inject("redisUrl"));
  app = createRedis(inject("redisUrl"));
  // The test run's redis-server, used the way the app's Redis is when redis-server is missing.
  shared = await openLabRedis({ shared: app, forceShared: true });
  privateRedis = await openLabRedis();
});

afterAll(async () => {
  await Promise.allSettled([shared.close(), privateRedis.close()]);
  redis.disconnect();
  app.disconnect();
});

/** The watchdog's timer, ticked by hand: a tick is one period passing, resolved once the renewal is answered. */
function handTimer() {
  let tick: (() => Promise<void>) | null = null;
  const timer = {
    periodMs: 0,
    get running() {
      return tick !== null;
    },
    every: ((ms, fn) => {
      timer.periodMs = ms;
      tick = fn;
      return () => void (tick = null);
    }) as Every,
    tick: () => tick?.() ?? Promise.resolve(),
  };
  return timer;
}

// Longer than any test step takes on a busy machine: a lease runs out only when a test shortens it.
const LEASE = 60_000;

describe("the lock", () => {
  it("is released only by its owner", async () => {
    const key = userLockKey(1, prefix());
    const held = await acquireLock(redis, key, { ttlMs: LEASE, maxAttempts: 1 });
    expect(held).not.toBeNull();
    expect(await releaseLock(redis, key, "not-the-owner")).toBe(false);
    expect(await redis.get(key)).toBe(held!.token);
    expect(await releaseLock(redis, key, held!.token)).toBe(true);
    expect(await redis.exists(key)).toBe(0);
  });

  it("is waited for with bounded tries, and given up when it stays taken", async () => {
    const key = userLockKey(1, prefix());
    await acquireLock(redis, key, { ttlMs: LEASE, maxAttempts: 1 });
    let waits = 0;
    const other = await acquireLock(redis, key, { ttlMs: LEASE, maxAttempts: 4, onWait: () => waits++ });
    expect(other).toBeNull();
    expect(waits).toBe(1);
  });

  it("is a lease: taken over once it ran out, and the old owner can no longer release it", async () => {
    const key = userLockKey(1, prefix());
    const first = await acquireLock(redis, key, { ttlMs: LEASE, maxAttempts: 1 });
    const pttl = await redis.pttl(key);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(LEASE);
    expect(await acquireLock(redis, key, { ttlMs: LEASE, maxAttempts: 1 })).toBeNull();
    // The lease runs out (cut short, as time would).
    await redis.pexpire(key, 1);
    await expect.poll(() => redis.exists(key), { timeout: 10_000 }).toBe(0);
    const second = await acquireLock(redis, key, { ttlMs: LEASE, maxAttempts: 1 });
    expect(second).not.toBeNull();
    expect(await releaseLock(redis, key, first!.token)).toBe(false);
    expect(await redis.get(key)).toBe(second!.token);
  });

  it("keeps its lease while the watchdog renews it, and loses it once the watchdog stops", async () => {
    const key = userLockKey(1, prefix());
    const unwatched = userLockKey(2, prefix());
    const held = await acquireLock(redis, key, { ttlMs: LEASE, maxAttempts: 1 });
    await acquireLock(redis, unwatched, { ttlMs: LEASE, maxAttempts: 1 });
    const timer = handTimer();
    const dog = startWatchdog(redis, key, held!.token, LEASE, timer.every);
    expect(timer.periodMs).toBe(LEASE / 3);
    for (let period = 1; period <= 2; period++) {
      // Time runs both leases down to a second; the watchdog's renewal puts only its own back to a full lease.
      await redis.pexpire(key, 1000);
      await redis.pexpire(unwatched, 1000);
      await timer.tick();
      expect(await redis.pttl(key)).toBeGreaterThan(1000);
      expect(await redis.pttl(unwatched)).toBeLessThanOrEqual(1000);
      expect(dog.renewals).toBe(period);
    }
    expect(await redis.get(key)).toBe(held!.token);
    dog.stop();
    expect(timer.running).toBe(false);
    // Nothing renews it any more: once its lease runs out, another worker takes the lock.
    await redis.pexpire(key, 1);
    await expect.poll(() => redis.exists(key), { timeout: 10_000 }).toBe(0);
    expect(await acquireLock(redis, key, { ttlMs: LEASE, maxAttempts: 1 })).not.toBeNull();
    expect(dog).toMatchObject({ renewals: 2, lost: false });
  });

  it("has a watchdog that notices when the lock is no longer its own, and stops", async () => {
    const key = userLockKey(1, prefix());
    const held = await acquireLock(redis, key, { ttlMs: LEASE, maxAttempts: 1 });
    await redis.set(key, "someone-else");
    const timer = handTimer();
    const dog = startWatchdog(redis, key, held!.token, LEASE, timer.every);
    await timer.tick();
    expect(dog).toMatchObject({ lost: true, renewals: 0 });
    expect(timer.running).toBe(false);
    expect(await redis.get(key)).toBe("someone-else");
    expect(await redis.pttl(key)).toBe(-1); // not given a lease by the old owner either
  });
});

const small = (overrides: Parameters<typeof resolveWorkload>[0] = {}) =>
  resolveWorkload({ users: 8, conversationsPerUser: 3, workers: 8, operations: 1500, seed: 7, ...overrides });

describe("runs", () => {
  it("detects the drift naive leaves when the second step fails", async () => {
    const { result } = await runStrategy({
      name: "naive",
      workload: small({ workers: 1, faults: { stepFailureRate: 0.1 } }),
      labRedis: shared,
      prefix: prefix(),
    });
    expect(result.aborted).toBeGreaterThan(0);
    expect(result.drift.users).toBeGreaterThan(0);
    expect(result.drift.amount).toBeGreaterThan(0);
    expect(result.wrong.totals).toBeGreaterThan(0);
  });

  it("finds no drift in naive when nothing fails and one worker runs alone", async () => {
    const { result } = await runStrategy({
      name: "naive",
      workload: small({ workers: 1 }),
      labRedis: shared,
      prefix: prefix(),
    });
    expect(result.completed).toBe(1500);
    expect(result.drift).toEqual({ users: 0, amount: 0 });
  });

  it("keeps lua exact through every fault, a Redis restart included", async () => {
    const { result } = await runStrategy({
      name: "lua",
      workload: small({
        operations: 3000,
        faults: {
          stepFailureRate: 0.05,
          stepDelayMs: 2,
          stepDelayRate: 0.1,
          workerDeathRate: 0.01,
          redisRestart: true,
        },
      }),
      labRedis: privateRedis,
      prefix: prefix(),
      restart: true,
    });
    expect(result.aborted).toBeGreaterThan(0);
    expect(result.completed).toBe(3000);
    expect(result.lost).toBe(0);
    expect(result.drift).toEqual({ users: 0, amount: 0 });
    expect(result.wrong).toEqual({ counts: 0, totals: 0 });
  });

  it("shows lua's users their truth after a restart lost their keys, before any operation of theirs came", async () => {
    const p = prefix();
    const { workload, strategy } = await runStrategy({ name: "lua", workload: small(), labRedis: shared, prefix: p });
    const users = Array.from({ length: 8 }, (_, i) => i + 1);
    expect(await shared.deleteKeys(p)).toBeGreaterThan(0); // what a restart of a Redis without persistence does
    // Without a restart, missing keys read as missing: a bug that loses them must show.
    const plain = await strategy.read(redis, users);
    expect(plain.every((s) => s.total === 0 && s.counts.size === 0)).toBe(true);
    const states = await strategy.read(redis, users, { rebuildMissing: true });
    expect(wrongOf(users, states, workload.truth)).toEqual({ counts: 0, totals: 0 });
    expect(states.some((s) => s.total > 0)).toBe(true);
  });

  it("emits a strategy's end-of-run sample last, after any live sample read before the end", async () => {
    // Every operation waits 5 ms between its steps: the workers run for 100 ms or more, the sampler reads at 5 ms.
    const workload = small({ workers: 4, operations: 100, faults: { stepDelayMs: 5, stepDelayRate: 1 } });
    const { labRedis, seen } = monitorAnsweredLate(shared, workload.workers);
    const samples: Array<Omit<LabSample, "runId">> = [];
    const p = prefix();
    const { result } = await runStrategy({
      name: "naive",
      workload,
      labRedis,
      prefix: p,
      sampleEveryMs: 5,
      onSample: (sample) => samples.push(sample),
    });
    await shared.deleteKeys(p);
    expect(seen.held).toBe(true);
    // The chart and the live badges show the newest sample: it is the end state the results table reports.
    expect(samples.map((s) => s.t)).toEqual(samples.map((s) => s.t).sort((a, b) => a - b));
    expect(samples.at(-1)).toMatchObject({ completed: result.completed, drift: result.drift });
    expect(result.completed).toBe(100);
  });

  it("replays the same operations for the same seed", async () => {
    const a = await runStrategy({ name: "lua", workload: small({ workers: 4 }), labRedis: shared, prefix: prefix() });
    const b = await runStrategy({ name: "lua", workload: small({ workers: 1 }), labRedis: shared, prefix: prefix() });
    const counts = (run: typeof a) => Array.from({ length: 8 }, (_, u) => run.workload.truth.total(u + 1));
    expect(counts(a)).toEqual(counts(b));
  });
});

/**
 * `lab`, but its first connection (the runner's monitor: it connects before any worker) gets Redis's answers late
 * once: from the first MULTI sent on it while the workers run (a live sample's read) until every worker is gone
 * and Redis has answered a PING sent after them; then all in one chunk, as one read of the socket gets them when
 * a busy Redis or event loop lets that sample's answers and the end-of-run read's arrive together.
 */
function monitorAnsweredLate(lab: LabRedis, workers: number) {
  let monitor: Redis | undefined;
  let ended = 0;
  let held: Buffer[] | null = null;
  let pinged = false;
  const seen = { held: false };
  const labRedis: LabRedis = {
    ...lab,
    async connect() {
      const conn = (await lab.connect()) as Redis;
      if (monitor) {
        conn.once("end", () => {
          if (++ended < workers || !held) return;
          pinged = true;
          void monitor?.ping();
        });
        return conn;
      }
      monitor = conn;
      const stream = conn.stream;
      const deliver = stream.listeners("data") as Array<(chunk: Buffer) => void>;
      stream.removeAllListeners("data");
      stream.on("data", (chunk: Buffer) => {
        if (!held) return deliver.forEach((fn) => fn.call(stream, chunk));
        held.push(chunk);
        const all = Buffer.concat(held);
        if (!pinged || !all.toString("latin1").endsWith("+PONG\r\n")) return;
        held = null;
        deliver.forEach((fn) => fn.call(stream, all));
      });
      const multi = conn.multi.bind(conn);
      conn.multi = ((...args: Parameters<typeof multi>) => {
        if (!seen.held && ended < workers) {
          seen.held = true;
          held = [];
        }
        return multi(...args);
      }) as typeof conn.multi;
      return conn;
    },
  };
  return { labRedis, seen };
}

describe("stories", () => {
  it("shows naive ending with badge 1 and list 0 when a read races a send", async () => {
    const story = await replayStory("race", "naive", shared);
    expect(story.verdict).toBe("drift");
    expect(story.steps.at(-1)).toMatchObject({ list: 0, badge: 1 });
  });

  it("shows the lock making the reader wait, WATCH retrying, and Lua right in the race", async () => {
    const lock = await replayStory("race", "lock", shared);
    expect(lock.steps.some((s) => s.actor === "reader" && /wait/.test(s.action))).toBe(true);
    expect(lock.steps.at(-1)!.list).toBe(lock.steps.at(-1)!.badge);
    const watch = await replayStory("race", "watch", shared);
    expect(watch.steps.some((s) => /EXEC → nil/.test(s.action))).toBe(true);
    expect(watch.verdict).toBe("correct");
    const lua = await replayStory("race", "lua", shared);
    expect(lua).toMatchObject({ verdict: "correct", truth: 1 });
  });

  it("shows a crash between the writes leaving naive and lock drifting, WATCH and Lua whole", async () => {
    const verdicts = [];
    for (const name of ["naive", "lock", "watch", "lua"] as const)
      verdicts.push((await replayStory("crash", name, shared)).verdict);
    expect(verdicts).toEqual(["drift", "drift", "correct", "correct"]);
  });
});

describe("cleanup", () => {
  it("deletes only the keys under the lab prefix it is given", async () => {
    const p = prefix();
    await app.hset("{u:424242}:meta", "total", 1);
    await app.set(`${p}{u:1}:meta`, "x");
    await app.set(`${p}{u:2}:lock`, "x");
    await app.set("lab:someone-else:{u:1}:meta", "x");
    expect(await deleteKeys(redis, p)).toBe(2);
    expect(await app.exists("{u:424242}:meta", "lab:someone-else:{u:1}:meta")).toBe(2);
    await app.del("{u:424242}:meta", "lab:someone-else:{u:1}:meta");
  });

  it("refuses a prefix outside the lab's key space", async () => {
    await expect(deleteKeys(redis, "{u:")).rejects.toThrow(/refusing/);
  });
});
