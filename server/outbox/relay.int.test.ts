import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { createDb, type Db } from "../db/prisma.ts";
import { logger } from "../log.ts";
import { createRedis } from "../redis/client.ts";
import { createTestDatabase, type TestDatabase } from "../testing/db.ts";
import { reconcile } from "../unread/reconcile.ts";
import { createUnreadService } from "../unread/unread.service.ts";
import { createOutbox, type OutboxEntry } from "./outbox.ts";
import { createRelay, type Replayers } from "./relay.ts";

let database: TestDatabase;
let db: Db;
const redis = createRedis(inject("redisTarget"));
beforeAll(async () => {
  database = await createTestDatabase(inject("pgAdminUrl"));
  db = createDb(database.url, { max: 2 });
});
afterAll(async () => {
  await Promise.allSettled([db.$disconnect(), redis.quit()]);
  await database.drop();
});

const POISONED = 666;
const quiet = logger.child({}, { level: "silent" });

/** Replayers that record what they were asked and fail for one conversation, as a poisoned entry would. */
function recordingReplayers() {
  const calls: OutboxEntry[] = [];
  const replay = async (entry: OutboxEntry) => {
    calls.push(entry);
    if (entry.conversationId === POISONED) throw new Error("poisoned entry");
  };
  const replayers: Replayers = { message: replay, read: replay, remove: replay, state: replay, deletion: replay };
  return { calls, replayers };
}

describe("the outbox relay", () => {
  it("replays good entries once and parks a poisoned one after maxAttempts, which reconciliation reports", async () => {
    await db.outboxEvent.deleteMany();
    await db.outboxEvent.createMany({
      data: [
        { kind: "message", conversationId: 1, userId: 1, seq: 1 },
        { kind: "message", conversationId: POISONED, userId: 1, seq: 1 },
        { kind: "read", conversationId: 2, userId: 1, seq: 3 },
      ],
    });
    const { calls, replayers } = recordingReplayers();
    const relay = createRelay({ db, replayers, log: quiet, options: { maxAttempts: 3, retryS: 0 } });

    expect(await relay.runOnce()).toEqual({ replayed: 2, failed: 1, parked: 0 });
    expect(await relay.runOnce()).toEqual({ replayed: 0, failed: 1, parked: 0 });
    expect(await relay.runOnce()).toEqual({ replayed: 0, failed: 1, parked: 1 });
    // Parked: never claimed again.
    expect(await relay.runOnce()).toEqual({ replayed: 0, failed: 0, parked: 0 });
    expect(calls.filter((c) => c.conversationId === POISONED)).toHaveLength(3);
    expect(calls.filter((c) => c.conversationId !== POISONED)).toHaveLength(2);

    const left = await db.outboxEvent.findMany();
    expect(left).toHaveLength(1);
    expect(left[0]).toMatchObject({ conversationId: POISONED, attempts: 3, lastError: "poisoned entry" });
    expect(left[0]!.deadAt).toBeInstanceOf(Date);

    const report = await reconcile({ db, unread: createUnreadService({ redis, db }) }, { settleMs: 0 });
    expect(report.parkedOutbox).toBe(1);
    expect(report.parkedExamples).toEqual([
      { id: left[0]!.id, kind: "message", conversationId: POISONED, userId: 1, lastError: "poisoned entry" },
    ]);
  });

  it("backs a failing entry off instead of retrying it on every pass", async () => {
    await db.outboxEvent.deleteMany();
    await db.outboxEvent.create({ data: { kind: "remove", conversationId: POISONED, userId: 2, seq: 0 } });
    const { calls, replayers } = recordingReplayers();
    // A back-off of an hour: the next passes, made at once, must leave it alone.
    const relay = createRelay({ db, replayers, log: quiet, options: { retryS: 3600, maxBackoffS: 3600 } });
    expect((await relay.runOnce()).failed).toBe(1);
    expect(await relay.runOnce()).toEqual({ replayed: 0, failed: 0, parked: 0 });
    expect(calls).toHaveLength(1);
    const [row] = await db.outboxEvent.findMany();
    expect(row).toMatchObject({ attempts: 1, deadAt: null, lastError: "poisoned entry" });
    expect(row!.claimedUntil!.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
  });
});

describe("completing outbox entries", () => {
  it("deletes the ids queued by completeSoon in the background, and only those, by the time flush resolves", async () => {
    await db.outboxEvent.deleteMany();
    const rows = await Promise.all(
      [1, 2, 3].map((seq) => db.outboxEvent.create({ data: { kind: "message", conversationId: 7, userId: 1, seq } })),
    );
    const outbox = createOutbox(db, quiet);
    outbox.completeSoon([rows[0]!.id]);
    outbox.completeSoon([rows[1]!.id]);
    // Nothing waits for it: the rows are still there until the next turn of the event loop.
    expect(await db.outboxEvent.count()).toBeGreaterThanOrEqual(1);
    await outbox.flush();
    expect((await db.outboxEvent.findMany({ select: { seq: true } })).map((r) => r.seq)).toEqual([3]);
    outbox.completeSoon([rows[2]!.id]);
    await outbox.flush();
    expect(await db.outboxEvent.count()).toBe(0);
  });
});
