import type { BlockList, UserDTO } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { AppError, noSuchUsers } from "../errors.ts";

export type BlockService = ReturnType<typeof createBlockService>;

/** The most people one account may block: the list is pushed whole to every tab of its owner on each change. */
export const MAX_BLOCKS = 1000;

/** A block list after a block or an unblock, and whether that changed it (only a change is pushed to the tabs). */
export interface BlockChange {
  list: BlockList;
  changed: boolean;
}

/** A transaction's client, or the client itself for a lone statement. */
type Tx = Pick<Db, "$executeRaw">;

/**
 * Locks each pair of `userId` and one of `otherIds` until the transaction ends: `exclusive` to write a block
 * between them, shared to create a conversation of them. So a block and a conversation's creation happen one
 * after the other: the creation sees the block and refuses, or the block's trigger sees the conversation and sets
 * its `blocked` flag (prisma/migrations/20261208000000_block_flag). Pairs in one order, so two callers never wait on
 * each other in a circle. Advisory locks of two keys (the lower id, the higher), apart from the one-key locks
 * elsewhere (sign-up's name skeletons, the migrations').
 */
export async function lockPairs(tx: Tx, userId: number, otherIds: number[], mode: "exclusive" | "shared") {
  if (otherIds.length === 0) return;
  if (mode === "exclusive") {
    await tx.$executeRaw`
      SELECT pg_advisory_xact_lock(LEAST(${userId}::int, o), GREATEST(${userId}::int, o))
      FROM unnest(${otherIds}::int[]) AS o ORDER BY LEAST(${userId}::int, o), GREATEST(${userId}::int, o)`;
  } else {
    await tx.$executeRaw`
      SELECT pg_advisory_xact_lock_shared(LEAST(${userId}::int, o), GREATEST(${userId}::int, o))
      FROM unnest(${otherIds}::int[]) AS o ORDER BY LEAST(${userId}::int, o), GREATEST(${userId}::int, o)`;
  }
}

/**
 * Blocking (docs/security.md, "Blocking"): the rows, and who is blocked between whom. What a block stops is checked
 * where it happens: starting a conversation (conversations.service.ts) and writing in a direct conversation
 * (the `blocked` flag of its row, which a trigger on "Block" keeps in each block's and unblock's transaction, and
 * tally_store_messages checks; prisma/migrations/20261208000000_block_flag).
 */
export function createBlockService({ db }: { db: Db }) {
  /** The people `userId` blocked, by name in any letter case, and the list's version: one statement, one snapshot. */
  async function list(userId: number): Promise<BlockList> {
    const [row] = await db.$queryRaw<{ version: number; blocked: UserDTO[] }[]>`
      SELECT me."blocksVersion" AS "version", COALESCE((
        SELECT json_agg(json_build_object('id', u."id", 'name', u."name") ORDER BY LOWER(u."name"), u."name")
        FROM "Block" b JOIN "User" u ON u."id" = b."blockedId" WHERE b."blockerId" = me."id"), '[]') AS "blocked"
      FROM "User" me WHERE me."id" = ${userId}`;
    return { blocked: row?.blocked ?? [], version: row?.version ?? 0 };
  }

  /**
   * Blocks the person called `name` (any letter case; a bot, like a name nobody has, is `not_found`). Blocking
   * someone twice is one block. Answers the list as it is now, and whether this changed it: a block already there
   * changes nothing, not even the version, and a block past the cap is refused with nothing written.
   */
  async function block(user: UserDTO, name: string): Promise<BlockChange> {
    if (name.toLowerCase() === user.name.toLowerCase()) throw new AppError("invalid", "You cannot block yourself.");
    const [target] = await db.$queryRaw<{ id: number }[]>`
      SELECT "id" FROM "User" WHERE LOWER("name") = ${name.toLowerCase()} AND NOT "isBot"`;
    if (!target) throw new AppError("not_found", noSuchUsers([name]));
    // One statement: the cap holds however many blocks of one user arrive at once (READ COMMITTED may let two
    // concurrent ones both see 999; the overshoot is one per concurrent request, bounded by the `block` limit).
    const changed = await db.$transaction(async (tx) => {
      await lockPairs(tx, user.id, [target.id], "exclusive");
      const n = await tx.$executeRaw`
        INSERT INTO "Block" ("blockerId", "blockedId")
        SELECT ${user.id}, ${target.id}
        WHERE (SELECT COUNT(*) FROM "Block" WHERE "blockerId" = ${user.id}) < ${MAX_BLOCKS}
        ON CONFLICT DO NOTHING`;
      if (n > 0) {
        await bumpVersion(tx, user.id);
        return true;
      }
      const already = await tx.block.findUnique({
        where: { blockerId_blockedId: { blockerId: user.id, blockedId: target.id } },
      });
      if (already) return false;
      throw new AppError(
        "conflict",
        `You have blocked ${MAX_BLOCKS} people, the most one account can; unblock someone first.`,
      );
    });
    return { list: await list(user.id), changed };
  }

  /**
   * Unblocks `blockedId`. Answers the list as it is now, and whether this changed it: someone not blocked (or
   * nobody by that id) changes nothing, not even the version.
   */
  async function unblock(user: UserDTO, blockedId: number): Promise<BlockChange> {
    const changed = await db.$transaction(async (tx) => {
      await lockPairs(tx, user.id, [blockedId], "exclusive");
      const { count } = await tx.block.deleteMany({ where: { blockerId: user.id, blockedId } });
      if (count > 0) await bumpVersion(tx, user.id);
      return count > 0;
    });
    return { list: await list(user.id), changed };
  }

  /**
   * The next version of the user's list, in the transaction that changes it. The row stays locked until it commits,
   * so the user's blocks and unblocks are numbered in the order they commit.
   */
  async function bumpVersion(tx: Tx, userId: number) {
    await tx.$executeRaw`UPDATE "User" SET "blocksVersion" = "blocksVersion" + 1 WHERE "id" = ${userId}`;
  }

  return { list, block, unblock };
}
