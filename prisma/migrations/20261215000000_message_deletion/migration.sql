-- Deleting a message (docs/consistency.md, "7. Deleting a message"): its sender takes it back for everyone. The row
-- stays, so the conversation's seqs stay whole and every cursor and count stays arithmetic; its text is emptied
-- ("content" = '') and "deletedAt" set, its Mention rows go, and a `deletion` outbox entry carries it to the
-- counters, where a deleted message never counts, as the reader's own messages never do: rebuilds read the
-- deleted seqs above each cursor with the partial index below (only deleted rows are in it).
ALTER TABLE "Message" ADD COLUMN "deletedAt" TIMESTAMP(3);

CREATE INDEX "Message_deleted_conversationId_seq_idx" ON "Message"("conversationId", "seq")
WHERE "deletedAt" IS NOT NULL;

ALTER TYPE "OutboxKind" ADD VALUE 'deletion';
