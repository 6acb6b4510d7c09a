import type { Db } from "../db/prisma.ts";

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
 * Completion deletes by content rather than id, so a retried send completes its first attempt's entry too.
 */
export function createOutbox(db: Db) {
  return {
    /**
     * Deletes the entries with these ids: for changes that returned their own entry's id, so that completing one
     * never completes another change that wrote an entry with the same content (two reads to the same seq, one of
     * which cleared a mark).
     */
    async completeIds(ids: number[]): Promise<void> {
      if (ids.length === 0) return;
      await db.outboxEvent.deleteMany({ where: { id: { in: ids } } });
    },
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
