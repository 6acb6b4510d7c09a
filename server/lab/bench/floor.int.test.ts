import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../testing/db.ts";
import { openFloorTransport } from "./floor.ts";
import type { LoadTransport } from "./load.ts";
import { startFloor, type Instance } from "./services.ts";

let database: TestDatabase;
let dataRoot: string;
let relays: Instance[] = [];
let pool: pg.Pool;
beforeAll(async () => {
  database = await createTestDatabase(inject("pgAdminUrl"));
  dataRoot = await mkdtemp(path.join(os.tmpdir(), "tally-floor-"));
  const services = { tmpDir: dataRoot, databaseUrl: database.url, redisUrl: inject("redisUrl") };
  // One after the other, as the bench starts them: the first creates the table.
  relays = [await startFloor(services, "A"), await startFloor(services, "B")];
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
});
afterAll(async () => {
  await pool?.end();
  await Promise.allSettled(relays.map((r) => r.stop()));
  await database?.drop();
  await rm(dataRoot, { recursive: true, force: true });
});

/** The arrivals a transport reports, as "k:n". */
function arrivals(transport: LoadTransport): { seen: Set<string>; next: (key: string) => Promise<void> } {
  const seen = new Set<string>();
  const waiting = new Map<string, () => void>();
  transport.onArrival((k, n) => {
    seen.add(`${k}:${n}`);
    waiting.get(`${k}:${n}`)?.();
  });
  return {
    seen,
    next: (key) => (seen.has(key) ? Promise.resolve() : new Promise((resolve) => waiting.set(key, resolve))),
  };
}

it("pushes a durable floor message only once it is committed, and a plain one without the database", async () => {
  const [a, b] = relays as [Instance, Instance];
  const plain = await openFloorTransport(a, b, 2);
  const durable = await openFloorTransport(a, b, 2, { durable: true }).catch((err: unknown) => {
    plain.close();
    throw err;
  });
  const heardPlain = arrivals(plain);
  const heardDurable = arrivals(durable);
  const holder = await pool.connect();
  try {
    // Hold the table: the relay's insert waits for this transaction, and so must its push and its answer.
    await holder.query("BEGIN");
    await holder.query("LOCK TABLE bench_floor_message IN EXCLUSIVE MODE");
    let answered = false;
    const sent = durable.send(1).then((n) => {
      answered = true;
      return n;
    });
    sent.catch(() => undefined); // awaited below; an early failure is reported there, not as unhandled

    // Until the relay's insert is seen waiting for the lock (no timing involved), or the message got through.
    while (!answered && heardDurable.seen.size === 0) {
      const { rows } = await pool.query<{ waiting: number }>(
        `SELECT count(*)::int AS "waiting" FROM pg_locks
         WHERE NOT granted AND relation = 'bench_floor_message'::regclass`,
      );
      if (rows[0]!.waiting > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // The plain floor carries a message meanwhile, end to end, without the database.
    expect(await plain.send(0)).toBe(1);
    await heardPlain.next("0:1");
    expect(heardDurable.seen.size).toBe(0);
    expect(answered).toBe(false);

    await holder.query("COMMIT");
    expect(await sent).toBe(1);
    await heardDurable.next("1:1");
    const { rows } = await pool.query(`SELECT k, n, content FROM bench_floor_message`);
    expect(rows).toEqual([{ k: 1, n: 1, content: "bench" }]);
  } finally {
    holder.release();
    plain.close();
    durable.close();
  }
});

it("answers a durable floor message it could not store at once, and never pushes it", async () => {
  const [a, b] = relays as [Instance, Instance];
  const durable = await openFloorTransport(a, b, 1, { durable: true });
  const heard = arrivals(durable);
  // Conversation 0's messages break the new rule; the table's existing rows are not checked (NOT VALID).
  await pool.query("ALTER TABLE bench_floor_message ADD CONSTRAINT refuse_k0 CHECK (k <> 0) NOT VALID");
  try {
    await expect(durable.send(0)).rejects.toThrow("floor: message 1 of conversation 0: not stored");
    const { rows } = await pool.query(`SELECT count(*)::int AS "stored" FROM bench_floor_message WHERE k = 0`);
    expect(rows[0].stored).toBe(0);
  } finally {
    await pool.query("ALTER TABLE bench_floor_message DROP CONSTRAINT refuse_k0");
  }
  // The next message of the conversation is stored and pushed; the refused one never was.
  expect(await durable.send(0)).toBe(2);
  await heard.next("0:2");
  expect([...heard.seen]).toEqual(["0:2"]);
  durable.close();
});
