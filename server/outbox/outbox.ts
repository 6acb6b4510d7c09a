import { poolOf, type Db } from "../db/prisma.ts";
import type { Logger } from "../log.ts";

export type OutboxKind = "message" | "read" | "remove" | "state" | "deletion";

/** What an outbox row asks for; the same fields identify it for completion. */
export interface OutboxEntry {
  kind: OutboxKind;
  conversationId: number;
  userId: number;
  seq: number;
}

/**
 * How long a completion waits for a send to carry it before it goes out in a statement of its own. Cleanup, not
 * part of any answer: the relay replays an entry only once it is older than a pass interval (seconds).
 */
export const COMPLETE_WAIT_MS = 25;

/**
 * The outbox table: written in the same transaction as the change it describes, deleted once Redis has it.
 *
 * Completion is cleanup, not part of the answer: a change whose counters are applied is acknowledged without
 * waiting for its entry's DELETE. `completeSoon` queues the ids. The next group of sends takes them (`take`) and
 * deletes them in its own statement; what no send took within COMPLETE_WAIT_MS is deleted in one statement of its
 * own. An entry whose DELETE never ran (the process died, the database failed) is replayed by the relay after a
 * pass interval, and the replay changes nothing: the scripts are idempotent.
 */
export function createOutbox(db: Db, log?: Logger) {
  const pool = poolOf(db);
  let queued: number[] = [];
  let timer: NodeJS.Timeout | null = null;
  let done: Promise<void> = Promise.resolve();

  /** On the pool under Prisma, as a named prepared statement: it runs after every send (db/prisma.ts, poolOf). */
  async function deleteIds(ids: number[]): Promise<void> {
    await pool.query({
      name: "tally_outbox_complete",
      text: `DELETE FROM "OutboxEvent" WHERE "id" = ANY($1::int[])`,
      values: [ids],
    });
  }

  function take(): number[] {
    if (timer) clearTimeout(timer);
    timer = null;
    const ids = queued;
    queued = [];
    return ids;
  }

  /** Deletes what is queued now, in a statement of its own (after the ones before it). */
  function deleteQueued(): Promise<void> {
    const ids = take();
    if (ids.length > 0) {
      done = done.then(() =>
        deleteIds(ids).catch((err: unknown) =>
          log?.warn({ err, entries: ids.length }, "completing outbox entries failed; the relay replays them"),
        ),
      );
    }
    return done;
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
    /** completeIds in the background: carried by the next group of sends, or deleted on its own soon after. */
    completeSoon(ids: number[]): void {
      queued.push(...ids);
      if (timer || queued.length === 0) return;
      timer = setTimeout(() => void deleteQueued(), COMPLETE_WAIT_MS);
      timer.unref();
    },
    /**
     * The ids queued so far, for a statement that deletes them with its own work (the send group's). The caller
     * owns them from now on: it gives them back with completeSoon if its statement fails.
     */
    take,
    /** Deletes everything queued now and resolves once every completion so far has been tried (closing waits). */
    flush(): Promise<void> {
      return deleteQueued();
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
