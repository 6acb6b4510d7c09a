-- An outbox entry that keeps failing stops being retried: the relay parks it (deadAt, with the last error) and
-- reconciliation reports it. Retries back off with the attempt count (see server/outbox/relay.ts).

-- AlterTable
ALTER TABLE "OutboxEvent" ADD COLUMN     "deadAt" TIMESTAMP(3),
ADD COLUMN     "lastError" TEXT;

-- CreateIndex
CREATE INDEX "OutboxEvent_deadAt_idx" ON "OutboxEvent"("deadAt");
