import type { Db } from "../db/prisma.ts";
import { toMessageDTO } from "../conversations/conversations.service.ts";
import type { Logger } from "../log.ts";
import { messageEvents } from "../messages/delivery.ts";
import type { Notifier } from "../realtime/notifier.ts";
import type { UnreadService } from "../unread/unread.service.ts";

const CLAIM_SECONDS = 30;

interface Row {
  id: number;
  kind: "message" | "read" | "remove";
  conversationId: number;
  userId: number;
  seq: number;
}

export type Relay = ReturnType<typeof createRelay>;

/**
 * Replays outbox entries that were committed but never applied to Redis (the process died in between, or Redis
 * was down). Every replay goes through the same idempotent scripts, so replaying an entry that was in fact
 * applied changes nothing. Instances share the work with FOR UPDATE SKIP LOCKED.
 */
export function createRelay(deps: { db: Db; unread: UnreadService; notifier: Notifier; log: Logger }) {
  const { db, unread, notifier, log } = deps;

  async function replay(row: Row): Promise<void> {
    if (row.kind === "remove") {
      const applied = await unread.remove(row.userId, row.conversationId);
      if (applied?.changed) notifier.unreadChanged(row.userId, applied.update);
      notifier.conversationRemoved(row.userId, row.conversationId);
      return;
    }
    const conversation = await db.conversation.findUnique({
      where: { id: row.conversationId },
      select: { lastSeq: true, memberships: { select: { userId: true } } },
    });
    if (!conversation) return; // deleted since: its removal entries take the counters out
    if (row.kind === "read") {
      const applied = await unread.applyOne({
        userId: row.userId,
        conversationId: row.conversationId,
        seenSeq: conversation.lastSeq,
        readSeq: row.seq,
      });
      if (applied.changed) notifier.unreadChanged(row.userId, applied.update);
      return;
    }
    const memberIds = conversation.memberships.map((m) => m.userId);
    const message = await db.message.findUnique({
      where: { conversationId_seq: { conversationId: row.conversationId, seq: row.seq } },
      include: { sender: { select: { name: true } } },
    });
    // Tabs connected to the instance that died never heard of it; clients drop duplicates by id.
    if (message) notifier.messageNew(memberIds, toMessageDTO(message));
    const applied = await unread.applyMany(
      messageEvents(
        {
          conversationId: row.conversationId,
          seq: row.seq,
          senderId: row.userId,
          ...(message ? { createdAtMs: message.createdAt.getTime() } : {}),
        },
        memberIds,
      ),
    );
    for (const a of applied) if (a.changed) notifier.unreadChanged(a.userId, a.update);
  }

  /**
   * Replays pending entries older than `minAgeMs` (fresh ones are still being applied by their request).
   * Entries are claimed in one short statement, not held in a transaction while Redis is called: a claim
   * expires after CLAIM_SECONDS, so the entries of a relay that died are taken by another.
   */
  async function runOnce(minAgeMs = 0, limit = 200): Promise<{ replayed: number; failed: number }> {
    const rows = await db.$queryRaw<Row[]>`
      UPDATE "OutboxEvent" SET "claimedUntil" = now() + make_interval(secs => ${CLAIM_SECONDS}), "attempts" = "attempts" + 1
      WHERE "id" IN (
        SELECT "id" FROM "OutboxEvent"
        WHERE "createdAt" <= now() - make_interval(secs => ${minAgeMs / 1000}::float8)
          AND ("claimedUntil" IS NULL OR "claimedUntil" < now())
        ORDER BY "id" LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      RETURNING "id", "kind"::text AS "kind", "conversationId", "userId", "seq"`;
    let replayed = 0;
    let failed = 0;
    for (const row of rows.sort((a, b) => a.id - b.id)) {
      try {
        await replay(row);
        await db.outboxEvent.deleteMany({ where: { id: row.id } });
        replayed++;
      } catch (err) {
        failed++;
        log.warn({ err, entry: row }, "outbox replay failed; the next pass retries it");
        await db.outboxEvent.updateMany({ where: { id: row.id }, data: { claimedUntil: null } }).catch(() => undefined);
      }
    }
    if (replayed > 0) log.info({ replayed, failed }, "replayed outbox entries");
    return { replayed, failed };
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
