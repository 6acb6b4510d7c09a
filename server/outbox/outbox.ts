import type { Db } from "../db/prisma.ts";

export type OutboxKind = "message" | "read" | "remove";

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
