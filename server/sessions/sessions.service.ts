import { z } from "zod";
import type { UserDTO } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { issueToken, readCookie, SESSION_COOKIE, verifyToken } from "./token.ts";

export const userName = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9_-]{1,32}$/, "A name is 1–32 letters, digits, '_' or '-'.");

export type SessionService = ReturnType<typeof createSessionService>;

export function createSessionService({ db, secret }: { db: Db; secret: string }) {
  /** Demo sign-in: a name is enough, and a new name creates the user. */
  async function signIn(name: string): Promise<{ user: UserDTO; token: string }> {
    const user = await db.user.upsert({
      where: { name },
      update: {},
      create: { name },
      select: { id: true, name: true },
    });
    return { user, token: issueToken(secret, user.id) };
  }

  /** The user behind a bearer token or session cookie, or null. */
  async function authenticate(input: {
    token?: unknown;
    authorization?: string;
    cookie?: string;
  }): Promise<UserDTO | null> {
    const bearer = input.authorization?.match(/^Bearer\s+(\S+)$/i)?.[1];
    const candidates = [
      typeof input.token === "string" ? input.token : undefined,
      bearer,
      readCookie(input.cookie, SESSION_COOKIE),
    ];
    for (const token of candidates) {
      if (!token) continue;
      const userId = verifyToken(secret, token);
      if (userId === null) continue;
      const user = await db.user.findUnique({ where: { id: userId }, select: { id: true, name: true } });
      if (user) return user;
    }
    return null;
  }

  return { signIn, authenticate };
}
