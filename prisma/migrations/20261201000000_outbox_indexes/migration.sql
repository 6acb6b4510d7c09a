-- Every send, read and mute writes an outbox entry and deletes it moments later, so each index on "OutboxEvent" is
-- an entry written (and later vacuumed) per change, inside the change's transaction. Two of the three had no reader:
--
-- - "createdAt": the relay claims the oldest pending entries in id order, by the primary key (an entry's id and its
--   time grow together); the time is only a filter on what that scan finds.
-- - "deadAt": it held every live entry under NULL, while the only queries that need it look for parked entries
--   (reconciliation's report and the metrics' parked count), which are few.
--
-- So the first goes and the second keeps parked entries only; the plans of those queries were checked with 200 000
-- pending entries (docs/benchmarks.md, "A twenty-first look"). What it buys is small: the outbox entry's INSERT took
-- 1–7 µs less in each of 8 alternated runs of `npm run bench -- --only statements`, and end to end nothing shows.
DROP INDEX "OutboxEvent_createdAt_idx";
DROP INDEX "OutboxEvent_deadAt_idx";
CREATE INDEX "OutboxEvent_parked_idx" ON "OutboxEvent"("deadAt") WHERE "deadAt" IS NOT NULL;
