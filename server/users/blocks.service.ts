import type { UserDTO } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { AppError, noSuchUsers } from "../errors.ts";

export type BlockService = ReturnType<typeof createBlockService>;

/** The most people one account may block: the list is pushed whole to every tab of its owner on each change. */
export const MAX_BLOCKS = 1000;

/**
 * Blocking (docs/security.md, "Blocking"): the rows, and who is blocked between whom. What a block stops is checked
 * where it happens: starting a conversation (conversations.service.ts) and writing in a direct conversation
 * (tally_store_messages, prisma/migrations/20261207000000_blocks).
 */
export function createBlockService({ db }: { db: Db }) {
  /** The people `userId` blocked, by name in any letter case. */
  async function list(userId: number): Promise<UserDTO[]> {
    const rows = await db.$queryRaw<UserDTO[]>`
      SELECT u."id", u."name" FROM "Block" b JOIN "User" u ON u."id" = b."blockedId"
      WHERE b."blockerId" = ${userId}
      ORDER BY LOWER(u."name"), u."name"`;
    return rows.map((u) => ({ id: u.id, name: u.name }));
  }

  /**
   * Blocks the person called `name` (any letter case; a bot, like a name nobody has, is `not_found`). Blocking
   * someone twice is one block. Answers the list as it is now.
   */
  async function block(user: UserDTO, name: string): Promise<UserDTO[]> {
    if (name.toLowerCase() === user.name.toLowerCase()) throw new AppError("invalid", "You cannot block yourself.");
    const [target] = await db.$queryRaw<{ id: number }[]>`
      SELECT "id" FROM "User" WHERE LOWER("name") = ${name.toLowerCase()} AND NOT "isBot"`;
    if (!target) throw new AppError("not_found", noSuchUsers([name]));
    // The pair's direct conversation's row is locked first, as tally_store_messages locks it before it looks for a
    // block (prisma/migrations/20261207000000_blocks): a send in it either commits before this block or sees
    // it, never is stored after the block was answered.
    const directKey = `${Math.min(user.id, target.id)}:${Math.max(user.id, target.id)}`;
    // One statement: the cap holds however many blocks of one user arrive at once (READ COMMITTED may let two
    // concurrent ones both see 999; the overshoot is one per concurrent request, bounded by the `block` limit).
    const [, inserted] = await db.$transaction([
      db.$queryRaw`SELECT 1 FROM "Conversation" WHERE "directKey" = ${directKey} FOR UPDATE`,
      db.$executeRaw`
        INSERT INTO "Block" ("blockerId", "blockedId")
        SELECT ${user.id}, ${target.id}
        WHERE (SELECT COUNT(*) FROM "Block" WHERE "blockerId" = ${user.id}) < ${MAX_BLOCKS}
        ON CONFLICT DO NOTHING`,
    ]);
    if (inserted === 0 && !(await blocks(user.id, target.id))) {
      throw new AppError(
        "conflict",
        `You have blocked ${MAX_BLOCKS} people, the most one account can; unblock someone first.`,
      );
    }
    return list(user.id);
  }

  /** Unblocks `blockedId` (nothing to do when they were not blocked). Answers the list as it is now. */
  async function unblock(user: UserDTO, blockedId: number): Promise<UserDTO[]> {
    await db.block.deleteMany({ where: { blockerId: user.id, blockedId } });
    return list(user.id);
  }

  /** Whether `blockerId` blocked `blockedId`. */
  async function blocks(blockerId: number, blockedId: number): Promise<boolean> {
    const row = await db.block.findUnique({ where: { blockerId_blockedId: { blockerId, blockedId } } });
    return row !== null;
  }

  return { list, block, unblock };
}
