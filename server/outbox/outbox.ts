import { poolOf, type Db } from "../db/prisma.ts";
import type { Logger } from "../log.ts";

export type OutboxKind = "message" | "read" | "remove" | "state";

/** What an outbox row asks for; the same fields identify it for completion. */
export interface OutboxEntry {
  kind: OutboxKind;
  conversationId: number;
  userId: number;
  seq: number;
}

/**
 * The outbox table: written in the same transaction as the change it describes, deleted once Redis has it.
 *
 * Completion is cleanup, not part of the answer: a change whose counters are applied is acknowledged without
 * waiting for its entry's DELETE. `completeSoon` queues the ids and deletes everything queued in one statement
 * on the next turn of the event loop (under load, one statement per batch instead of one per change). An entry
 * whose DELETE never ran (the process died, the database failed) is replayed by the relay after a pass interval,
 * and the replay changes nothing: the scripts are idempotent.
 */
export function createOutbox(db: Db, log?: Logger) {
  let queued: number[] = [];
  let scheduled = false;
  let done: Promise<void> = Promise.resolve();

  const pool = poolOf(db);

  /** On the pool under Prisma, as a named prepared statement: it runs after every send (db/prisma.ts, poolOf). */
  async function deleteIds(ids: number[]): Promise<void> {
    await pool.query({
      name: "tally_outbox_complete",
      text: `DELETE FROM "OutboxEvent" WHERE "id" = ANY($1::int[])`,
      values: [ids],
    });
  }

  return {
    /**
     * Deletes the entries with these ids now: for changes that returned their own entry's id, so that completing
     * one never completes another change that wrote an entry with the same content (two reads to the same seq,
     * one of which cleared a mark).
     */
    async completeIds(ids: number[]): Promise<void> {
      if (ids.length > 0) await deleteIds(ids);
    },
    /** completeIds in the background, batched with every other id queued before the next statement goes out. */
    completeSoon(ids: number[]): void {
      queued.push(...ids);
      if (scheduled || queued.length === 0) return;
      scheduled = true;
      done = done
        .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
        .then(() => {
          scheduled = false;
          const batch = queued;
          queued = [];
          return deleteIds(batch).catch((err: unknown) =>
            log?.warn({ err, entries: batch.length }, "completing outbox entries failed; the relay replays them"),
          );
        });
    },
    /** Resolves once every completion queued so far has been tried (closing waits for it). */
    flush(): Promise<void> {
      return done;
    },
    /**
     * Deletes by content: for a retried send, which does not know its first attempt's entry id. Deleting a twin
     * of another change's entry is harmless here: a message's (kind, conversation, sender, seq) is unique.
     */
    async complete(entries: OutboxEntry[]): Promise<void> {
      if (entries.length === 0) return;
      await db.outboxEvent.deleteMany({
        where: {
          OR: entries.map((e) => ({ kind: e.kind, conversationId: e.conversationId, userId: e.userId, seq: e.seq })),
        },
      });
    },
  };
}
export type Outbox = ReturnType<typeof createOutbox>;
