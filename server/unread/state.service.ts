import type { UnreadUpdate, UserDTO } from "../contracts/index.ts";
import { Prisma } from "../db/generated/client.ts";
import { shownSql } from "../contracts/dto.ts";
import type { Db } from "../db/prisma.ts";
import { AppError } from "../errors.ts";
import type { Outbox, OutboxEntry } from "../outbox/outbox.ts";
import type { Notifier } from "../realtime/notifier.ts";
import { registersSelect, type MembershipRegisters, type UnreadService } from "./unread.service.ts";

export type StateService = ReturnType<typeof createStateService>;

/**
 * A mute's or mark's answer: the conversation's state after it, and whether the user's unread state changed (a
 * version step) or not (then `unread` is the current state, which the client only compares, as a read's).
 */
type StateAck = { unread: UnreadUpdate; changed: boolean };

/** The registers a state statement returns, with its outbox entry's id (null when it changed nothing). */
type StateRow = MembershipRegisters & { outboxId: number | null };

/**
 * Muting and marking unread: the membership's registers change durably in PostgreSQL with a `state` outbox entry,
 * in one statement; then they are merged into the user's counters (apply.lua keeps the highest version, so the
 * order the changes reach Redis in does not matter) and pushed to their tabs. The relay's `replay` applies the
 * membership's current registers.
 *
 * A mute to the state the conversation is already in, or a mark of a conversation already marked or with no
 * message yet, changes nothing (no new version, no entry): a retried or duplicated command is idempotent, and a
 * mark's version never moves while the conversation stays marked, so every tab keeps naming the version it shows.
 */
/**
 * The membership `m` is in its user's list: not a direct conversation someone else started that has no message yet
 * (hiddenFrom, server/contracts/dto.ts). One hidden is no conversation of theirs to mute or mark: a mark would count 1
 * in a badge whose list has no row for it.
 */
const LISTED = Prisma.raw(
  shownSql("m", `(SELECT c0."lastSeq" FROM "Conversation" AS c0 WHERE c0."id" = m."conversationId")`),
);

export function createStateService(deps: { db: Db; unread: UnreadService; notifier: Notifier; outbox: Outbox }) {
  const { db, unread, notifier, outbox } = deps;

  async function applyRegisters(userId: number, conversationId: number, registers: MembershipRegisters) {
    const applied = await unread.applyOne({ userId, conversationId, seenSeq: 0, readSeq: 0, registers });
    if (applied.changed) notifier.unreadChanged(userId, applied.update);
    return applied;
  }

  async function finish(user: UserDTO, conversationId: number, row: StateRow | undefined, kind: "mute" | "mark") {
    if (!row) throw new AppError("forbidden", "You are not a member of this conversation.");
    const { outboxId, ...registers } = row;
    const applied = await applyRegisters(user.id, conversationId, registers);
    // A new mark whose apply changed nothing a client shows: Redis still showed the previous mark (the read that
    // cleared it has not been applied yet), so no push carries the new version; tabs naming the old one resync.
    if (kind === "mark" && outboxId !== null && !applied.changed) notifier.unreadStale([user.id]);
    if (outboxId !== null) outbox.completeSoon([outboxId]);
    return { unread: applied.update, changed: applied.changed };
  }

  /**
   * One statement: `update` (an UPDATE of the membership aliased `m`, its WHERE saying when it changes anything)
   * with a `state` outbox entry when it did; else the membership as it is. No row: not a member.
   */
  async function changeRegisters(
    user: UserDTO,
    conversationId: number,
    update: Prisma.Sql,
    entrySeq: "muteVersion" | "markVersion",
  ): Promise<StateRow | undefined> {
    const [row] = await db.$queryRaw<StateRow[]>`
      WITH changed AS (
        ${update}
        RETURNING m."muteVersion", m."muted", m."markVersion", m."markAt", m."markClearedVersion"
      ), outbox AS (
        INSERT INTO "OutboxEvent" ("kind", "conversationId", "userId", "seq")
        SELECT 'state'::"OutboxKind", ${conversationId}, ${user.id}, ${Prisma.raw(`"${entrySeq}"`)} FROM changed
        RETURNING "id"
      )
      SELECT changed.*, outbox."id" AS "outboxId" FROM changed, outbox
      UNION ALL
      SELECT m."muteVersion", m."muted", m."markVersion", m."markAt", m."markClearedVersion", NULL
      FROM "Membership" AS m
      WHERE m."userId" = ${user.id} AND m."conversationId" = ${conversationId} AND ${LISTED}
        AND NOT EXISTS (SELECT 1 FROM changed)`;
    return row;
  }

  /** `conversation:mute`: muteVersion + 1 and the new value, unless it already has that value. */
  async function mute(user: UserDTO, conversationId: number, muted: boolean): Promise<StateAck> {
    const update = Prisma.sql`
      UPDATE "Membership" AS m SET "muted" = ${muted}, "muteVersion" = m."muteVersion" + 1
      WHERE m."userId" = ${user.id} AND m."conversationId" = ${conversationId} AND m."muted" <> ${muted} AND ${LISTED}`;
    return finish(user, conversationId, await changeRegisters(user, conversationId, update, "muteVersion"), "mute");
  }

  /**
   * `conversation:markUnread`: markVersion + 1 and markAt = the conversation's lastSeq, unless it is marked
   * already (a mark above its clears, and the cursor not past it) or has no message yet: a mark there would count 1
   * with nothing behind it to read.
   */
  async function markUnread(user: UserDTO, conversationId: number): Promise<StateAck> {
    const update = Prisma.sql`
      UPDATE "Membership" AS m SET "markVersion" = m."markVersion" + 1, "markAt" = c."lastSeq"
      FROM "Conversation" AS c
      WHERE c."id" = m."conversationId" AND m."userId" = ${user.id} AND m."conversationId" = ${conversationId}
        AND c."lastSeq" > 0 AND NOT (m."markVersion" > m."markClearedVersion" AND m."lastReadSeq" <= m."markAt")
        AND ${LISTED}`;
    return finish(user, conversationId, await changeRegisters(user, conversationId, update, "markVersion"), "mark");
  }

  /** The relay's replay of a `state` entry: the membership's current registers (newer ones are always safe). */
  async function replay(entry: OutboxEntry): Promise<void> {
    const registers = await db.membership.findUnique({
      where: { userId_conversationId: { userId: entry.userId, conversationId: entry.conversationId } },
      select: registersSelect,
    });
    if (!registers) return; // left or deleted since: the removal entry takes the counters out
    await applyRegisters(entry.userId, entry.conversationId, registers);
  }

  return { mute, markUnread, replay };
}
