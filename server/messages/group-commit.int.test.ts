import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SendInput, UserDTO } from "../contracts/index.ts";
import { poolOf } from "../db/prisma.ts";
import { startHarness, type Harness } from "../testing/harness.ts";
import { testApi } from "../testing/api.ts";
import { createMessageService } from "./messages.service.ts";

// The send path stores the sends of one turn (and those that wait for a batch in flight) with one call of
// tally_store_messages: one transaction for all of them. These tests drive the service on the real database.
let h: Harness;
beforeAll(async () => {
  h = await startHarness(1);
});
afterAll(() => h.close());

const { user, create } = testApi(() => h);

async function pair(): Promise<{ a: UserDTO; b: UserDTO; conversationId: number }> {
  const [a, b] = [await user("gca"), await user("gcb")];
  const conversation = await create(a.token, [b.user.name]);
  // b starts it too, so that it is b's as well before its first message (either may write first).
  await create(b.token, [a.user.name]);
  return { a: a.user, b: b.user, conversationId: conversation.id };
}

const input = (conversationId: number, content = "hi", clientMsgId: string = randomUUID()): SendInput => ({
  conversationId,
  clientMsgId,
  content,
});

/**
 * Another transaction holding a conversation's row, as a stalled database or a slow statement would: sends to it
 * wait in the database until `release()`. `waiting()` counts this database's statements waiting on a lock.
 */
async function holdConversation(conversationId: number) {
  const pool = poolOf(h.db);
  const locker = await pool.connect();
  await locker.query("BEGIN");
  await locker.query(`SELECT 1 FROM "Conversation" WHERE "id" = $1 FOR UPDATE`, [conversationId]);
  const waiting = async () =>
    Number(
      (
        await pool.query(
          `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )
      ).rows[0].n,
    );
  let released = false;
  return {
    waiting,
    /** Ends the transaction (idempotent, also after a failed assertion) and gives the client back. */
    async release() {
      if (released) return;
      released = true;
      await locker.query("ROLLBACK").catch(() => {});
      locker.release();
    },
  };
}

describe("group commit of sends", () => {
  it("stores the sends of one turn in one transaction, each conversation's seqs in call order without gaps", async () => {
    const groups: number[] = [];
    const messages = createMessageService({ db: h.db, onGroup: (sends) => groups.push(sends) });
    const pairs = [await pair(), await pair(), await pair(), await pair()];
    const calls = Array.from({ length: 40 }, (_, i) => {
      const p = pairs[i % 4]!;
      return { sender: i % 3 === 0 ? p.b : p.a, input: input(p.conversationId, `m${i}`) };
    });
    const sent = await Promise.all(calls.map((c) => messages.send(c.sender, c.input)));

    for (const p of pairs) {
      const mine = sent.filter((s) => s.message.conversationId === p.conversationId);
      // Call order within a conversation is seq order: m0, m4, m8… get 1, 2, 3…
      expect(mine.map((s) => s.message.seq)).toEqual(mine.map((_, k) => k + 1));
      expect(mine.map((s) => s.message.content)).toEqual(
        calls.filter((c) => c.input.conversationId === p.conversationId).map((c) => c.input.content),
      );
      const stored = await h.db.message.findMany({
        where: { conversationId: p.conversationId },
        orderBy: { seq: "asc" },
      });
      expect(stored.map((m) => [m.seq, m.content])).toEqual(mine.map((s) => [s.message.seq, s.message.content]));
      const conv = await h.db.conversation.findUniqueOrThrow({ where: { id: p.conversationId } });
      expect(conv.lastSeq).toBe(10);
      // Each sender's cursor moved over their own messages right above it, and stopped below the other's first.
      for (const u of [p.a, p.b]) {
        const own = new Set(mine.filter((s) => s.message.senderId === u.id).map((s) => s.message.seq));
        let cursor = 0;
        while (own.has(cursor + 1)) cursor++;
        const membership = await h.db.membership.findUniqueOrThrow({
          where: { userId_conversationId: { userId: u.id, conversationId: p.conversationId } },
        });
        expect(membership.lastReadSeq).toBe(cursor);
      }
      expect(mine.every((s) => s.memberIds.sort().join() === [p.a.id, p.b.id].sort().join())).toBe(true);
    }
    // One outbox entry per message, with the id the fan-out completes.
    const entries = await h.db.outboxEvent.findMany({ where: { id: { in: sent.map((s) => s.outboxId!) } } });
    expect(entries).toHaveLength(40);
    // One transaction: now() is the same for every row it wrote.
    expect(new Set(sent.map((s) => s.message.createdAt)).size).toBe(1);
    // …and one statement, counted with the sends it carried.
    expect(groups).toEqual([40]);
  });

  it("answers each send of a group for itself: a stranger is refused and a retry gets its original, writing nothing", async () => {
    const messages = createMessageService({ db: h.db });
    const p = await pair();
    const stranger = (await user("gcs")).user;
    const first = await messages.send(p.a, input(p.conversationId, "first", "retry-1"));
    const [retried, refused, fresh, twiceA, twiceB] = await Promise.allSettled([
      messages.send(p.a, input(p.conversationId, "first", "retry-1")),
      messages.send(stranger, input(p.conversationId, "let me in")),
      messages.send(p.b, input(p.conversationId, "second")),
      messages.send(p.a, input(p.conversationId, "same id twice", "twice-1")),
      messages.send(p.a, input(p.conversationId, "same id twice", "twice-1")),
    ]);
    expect(retried).toMatchObject({ status: "fulfilled", value: { message: { id: first.message.id, seq: 1 } } });
    expect(refused).toMatchObject({ status: "rejected", reason: { code: "forbidden" } });
    expect(fresh).toMatchObject({ status: "fulfilled", value: { message: { seq: 2, content: "second" } } });
    // The same clientMsgId twice in one group: stored once, both answers name that message.
    expect(twiceA).toMatchObject({ status: "fulfilled", value: { message: { seq: 3 } } });
    expect(twiceB).toMatchObject({ status: "fulfilled", value: { message: { seq: 3 } } });
    const stored = await h.db.message.findMany({
      where: { conversationId: p.conversationId },
      orderBy: { seq: "asc" },
    });
    expect(stored.map((m) => m.content)).toEqual(["first", "second", "same id twice"]);
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: p.conversationId } })).lastSeq).toBe(3);
    expect(await h.db.message.count({ where: { senderId: stranger.id } })).toBe(0);
  });

  it("answers two attempts of one send racing in two groups with one message: the second meets the first's uncommitted row", async () => {
    const messages = createMessageService({ db: h.db });
    const p = await pair();
    // Another transaction holds the conversation's row, so both groups check for a duplicate (none is committed
    // yet) and then wait on the row: the first group's insert commits while the second still has to insert.
    const held = await holdConversation(p.conversationId);
    try {
      const first = messages.send(p.a, input(p.conversationId, "once", "race-1"));
      await expect.poll(held.waiting).toBe(1);
      // The second group (the other lane): the retry, and another member's send that must not be lost with it.
      const retry = messages.send(p.a, input(p.conversationId, "once", "race-1"));
      const other = messages.send(p.b, input(p.conversationId, "meanwhile"));
      await expect.poll(held.waiting).toBe(2);
      await held.release();
      const [a, b, c] = await Promise.all([first, retry, other]);
      expect(b.message).toEqual(a.message);
      expect(c.message).toMatchObject({ seq: 2, content: "meanwhile" });
    } finally {
      await held.release();
    }
    const stored = await h.db.message.findMany({
      where: { conversationId: p.conversationId },
      orderBy: { seq: "asc" },
    });
    expect(stored.map((m) => [m.seq, m.content])).toEqual([
      [1, "once"],
      [2, "meanwhile"],
    ]);
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: p.conversationId } })).lastSeq).toBe(2);
  });

  it("does not let a group stuck on a row lock hold another conversation's send: it is stored beside it", async () => {
    const groups: number[] = [];
    const messages = createMessageService({ db: h.db, onGroup: (sends) => groups.push(sends) });
    const [stuck, free] = [await pair(), await pair()];
    const held = await holdConversation(stuck.conversationId);
    try {
      const waiting = messages.send(stuck.a, input(stuck.conversationId, "held"));
      // One turn: the stuck send's group is out (its flush was queued first), so the next send finds it in flight.
      await new Promise((resolve) => setImmediate(resolve));
      // It waits for that group, which does not return; once the group has been out a while, it goes out beside it.
      const sent = await messages.send(free.a, input(free.conversationId, "beside"));
      expect(sent.message).toMatchObject({ conversationId: free.conversationId, seq: 1, content: "beside" });
      await expect.poll(held.waiting).toBe(1); // the stuck group still waits on the row
      await held.release();
      expect((await waiting).message).toMatchObject({ seq: 1, content: "held" });
      expect(groups).toEqual([1, 1]);
    } finally {
      await held.release();
    }
  });

  it("refuses a send with unavailable at once while the database holds the queue full, and stores the rest when it moves", async () => {
    const messages = createMessageService({ db: h.db, maxQueuedSends: 2 });
    const p = await pair();
    // The conversation's row held by another transaction stands for a stalled database.
    const held = await holdConversation(p.conversationId);
    try {
      // Two groups in the database (both lanes), waiting on the row; then two sends wait for a group.
      const inDatabase = [messages.send(p.a, input(p.conversationId, "1"))];
      await expect.poll(held.waiting).toBe(1);
      inDatabase.push(messages.send(p.b, input(p.conversationId, "2")));
      await expect.poll(held.waiting).toBe(2);
      const queued = [
        messages.send(p.a, input(p.conversationId, "3")),
        messages.send(p.b, input(p.conversationId, "4")),
      ];
      expect(messages.waiting()).toBe(2);
      await expect(messages.send(p.a, input(p.conversationId, "refused"))).rejects.toMatchObject({
        code: "unavailable",
      });
      await held.release();
      const sent = await Promise.all([...inDatabase, ...queued]);
      // Every acknowledged send got its own seq, without gaps. Not necessarily in call order: once the row is free,
      // the batch of 3 and 4 and the second batch already in the database race for it (seen under load: 1, 4, 2, 3).
      // A tab sends one message at a time, so a sender's own order never depends on that race.
      expect(sent.map((s) => s.message.seq).sort((x, y) => x - y)).toEqual([1, 2, 3, 4]);
      expect(sent.map((s) => s.message.content)).toEqual(["1", "2", "3", "4"]);
    } finally {
      await held.release();
    }
    const stored = await h.db.message.findMany({
      where: { conversationId: p.conversationId },
      orderBy: { seq: "asc" },
    });
    expect(stored.map((m) => m.content).sort()).toEqual(["1", "2", "3", "4"]);
    expect(messages.waiting()).toBe(0);
  });

  it("stores each message on its own when the group fails as a whole: only the bad one fails", async () => {
    const groups: number[] = [];
    const messages = createMessageService({ db: h.db, onGroup: (sends) => groups.push(sends) });
    const p = await pair();
    // PostgreSQL refuses a NUL in text (the socket edge refuses it earlier): the group's statement fails whole.
    const [good1, bad, good2] = await Promise.allSettled([
      messages.send(p.a, input(p.conversationId, "before")),
      messages.send(p.a, input(p.conversationId, "nul \u0000 byte")),
      messages.send(p.b, input(p.conversationId, "after")),
    ]);
    expect(bad.status).toBe("rejected");
    expect(good1).toMatchObject({ status: "fulfilled", value: { message: { content: "before" } } });
    expect(good2).toMatchObject({ status: "fulfilled", value: { message: { content: "after" } } });
    const stored = await h.db.message.findMany({
      where: { conversationId: p.conversationId },
      orderBy: { seq: "asc" },
    });
    expect(stored.map((m) => [m.seq, m.content])).toEqual([
      [1, "before"],
      [2, "after"],
    ]);
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: p.conversationId } })).lastSeq).toBe(2);
    // The failed group's statement is not counted; the two that stored a send alone are.
    expect(groups).toEqual([1, 1]);
  });

  it("deletes the outbox entries completed since the last group in the group's own statement, and gives them back if it fails", async () => {
    const p = await pair();
    const done = await h.db.outboxEvent.create({
      data: { kind: "message", conversationId: p.conversationId, userId: p.a.id, seq: 99 },
    });
    const givenBack: number[][] = [];
    let queued = [done.id];
    const outbox = {
      take: () => [queued, (queued = [])][0]!,
      completeSoon: (ids: number[]) => void givenBack.push(ids),
    };
    const messages = createMessageService({ db: h.db, outbox });

    // A statement that fails (PostgreSQL refuses a NUL in text) gives the ids back and deletes nothing.
    await expect(messages.send(p.a, input(p.conversationId, "nul \u0000 byte"))).rejects.toThrow();
    expect(givenBack).toEqual([[done.id]]);
    expect(await h.db.outboxEvent.count({ where: { id: done.id } })).toBe(1);

    queued = [done.id];
    const sent = await messages.send(p.a, input(p.conversationId, "carries the completion"));
    expect(queued).toEqual([]);
    expect(await h.db.outboxEvent.count({ where: { id: done.id } })).toBe(0);
    // Its own entry stays until its counters are applied.
    expect(await h.db.outboxEvent.count({ where: { id: sent.outboxId! } })).toBe(1);
  });
});
