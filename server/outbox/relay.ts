import type { Db } from "../db/prisma.ts";
import type { Logger } from "../log.ts";
import type { OutboxEntry, OutboxKind } from "./outbox.ts";

/** How each kind of entry is applied again; every behaviour that writes entries supplies its own. */
export type Replayers = Record<OutboxKind, (entry: OutboxEntry) => Promise<void>>;

export interface RelayOptions {
  /** Failed replays after which an entry is parked (deadAt) instead of retried. */
  maxAttempts?: number;
  /** After its n-th failure an entry waits retryS × 2^(n-1) seconds, at most `maxBackoffS`, before the next try. */
  retryS?: number;
  maxBackoffS?: number;
}

/** How long a claim lasts while its replay runs; a relay that dies mid-replay frees its entries after this. */
const CLAIM_S = 30;

interface Row extends OutboxEntry {
  id: number;
  attempts: number;
}

export type Relay = ReturnType<typeof createRelay>;

/**
 * Replays outbox entries that were committed but never applied to Redis (the process died in between, or Redis
 * was down). Every replay goes through the same idempotent scripts, so replaying an entry that was in fact
 * applied changes nothing. Instances share the work with FOR UPDATE SKIP LOCKED.
 *
 * A failing entry backs off (1 s, 2 s, 4 s … up to 5 minutes between tries) and after `maxAttempts` tries (50 by
 * default: about three and a half hours of failing) it is parked with its last error, so a poisoned entry cannot
 * be retried forever. Parking loses nothing durable: the change is in the database, reconciliation reports
 * parked entries, and it repairs the counters they would have fixed.
 */
export function createRelay(deps: { db: Db; replayers: Replayers; log: Logger; options?: RelayOptions }) {
  const { db, replayers, log } = deps;
  const maxAttempts = deps.options?.maxAttempts ?? 50;
  const retryS = deps.options?.retryS ?? 1;
  const maxBackoffS = deps.options?.maxBackoffS ?? 300;
  const backoffS = (attempts: number) => Math.min(retryS * 2 ** (attempts - 1), maxBackoffS);

  /**
   * Replays pending entries older than `minAgeMs` (fresh ones are still being applied by their request).
   * Entries are claimed in one short statement, not held in a transaction while Redis is called: a claim
   * expires, so the entries of a relay that died are taken by another.
   */
  async function runOnce(minAgeMs = 0, limit = 200): Promise<{ replayed: number; failed: number; parked: number }> {
    const rows = await db.$queryRaw<Row[]>`
      UPDATE "OutboxEvent"
      SET "attempts" = "attempts" + 1, "claimedUntil" = now() + make_interval(secs => ${CLAIM_S})
      WHERE "id" IN (
        SELECT "id" FROM "OutboxEvent"
        WHERE "deadAt" IS NULL
          AND "createdAt" <= now() - make_interval(secs => ${minAgeMs / 1000}::float8)
          AND ("claimedUntil" IS NULL OR "claimedUntil" < now())
        ORDER BY "id" LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      RETURNING "id", "kind"::text AS "kind", "conversationId", "userId", "seq", "attempts"`;
    let replayed = 0;
    let failed = 0;
    let parked = 0;
    for (const row of rows.sort((a, b) => a.id - b.id)) {
      const { id, attempts, ...entry } = row;
      try {
        await replayers[entry.kind](entry);
        await db.outboxEvent.deleteMany({ where: { id } });
        replayed++;
      } catch (err) {
        failed++;
        const lastError = err instanceof Error ? err.message.slice(0, 500) : String(err);
        if (attempts >= maxAttempts) {
          parked++;
          log.error({ err, entry, attempts }, "outbox entry failed too often; parked for reconciliation to report");
          await db.$executeRaw`UPDATE "OutboxEvent" SET "deadAt" = now(), "lastError" = ${lastError} WHERE "id" = ${id}`;
        } else {
          log.warn({ err, entry, attempts }, "outbox replay failed; it is retried after a back-off");
          await db.$executeRaw`
            UPDATE "OutboxEvent" SET "lastError" = ${lastError},
              "claimedUntil" = now() + make_interval(secs => ${backoffS(attempts)}::float8)
            WHERE "id" = ${id}`.catch(() => undefined);
        }
      }
    }
    if (replayed > 0) log.info({ replayed, failed }, "replayed outbox entries");
    return { replayed, failed, parked };
  }

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();

  return {
    runOnce,
    /** Replays everything pending now, then every `intervalMs` what is older than one interval. */
    start(intervalMs: number): void {
      running = runOnce(0).catch((err: unknown) => log.error({ err }, "outbox replay at start failed"));
      if (intervalMs <= 0) return;
      timer = setInterval(() => {
        running = running
          .then(() => runOnce(intervalMs))
          .catch((err: unknown) => log.warn({ err }, "outbox relay pass failed"));
      }, intervalMs);
      timer.unref();
    },
    async stop(): Promise<void> {
      clearInterval(timer);
      await running;
    },
  };
}
