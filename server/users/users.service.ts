import type { UserDTO } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { Prisma } from "../db/generated/client.ts";
import { shownSql } from "../contracts/dto.ts";

/** A conversation the caller's list shows: one hidden from them is no acquaintance (hiddenFrom). */
const SHOWN_TO_CALLER = Prisma.raw(shownSql("mine", `c."lastSeq"`));

export type UserDirectory = ReturnType<typeof createUserDirectory>;

/** The most names one look-up answers. */
export const LOOKUP_LIMIT = 10;

/** Escapes LIKE's wildcards: a name may contain `_`, which must match itself only. */
const likeLiteral = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Names for the "New conversation" form. Only people the caller already shares a conversation with are found,
 * so the route cannot list the accounts of strangers (a name that exists is still learnt by trying it).
 */
export function createUserDirectory({ db }: { db: Db }) {
  /** Up to LOOKUP_LIMIT names starting with `prefix` in any letter case, alphabetically; never the caller or a bot. */
  async function acquaintances(user: UserDTO, prefix: string): Promise<string[]> {
    const pattern = `${likeLiteral(prefix.toLowerCase())}%`;
    const rows = await db.$queryRaw<{ name: string }[]>`
      SELECT u."name" FROM "User" u
      WHERE u."id" <> ${user.id} AND NOT u."isBot" AND LOWER(u."name") LIKE ${pattern} ESCAPE '\\'
        AND EXISTS (
          SELECT 1 FROM "Membership" theirs
            JOIN "Membership" mine ON mine."conversationId" = theirs."conversationId" AND mine."userId" = ${user.id}
            JOIN "Conversation" c ON c."id" = mine."conversationId"
          WHERE theirs."userId" = u."id" AND ${SHOWN_TO_CALLER})
      ORDER BY LOWER(u."name"), u."name"
      LIMIT ${LOOKUP_LIMIT}`;
    return rows.map((r) => r.name);
  }

  return { acquaintances };
}
