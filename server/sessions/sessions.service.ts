import { createHash, randomBytes } from "node:crypto";
import type { UserDTO } from "../contracts/index.ts";
import type { Db } from "../db/prisma.ts";
import { isUniqueViolation } from "../db/unique.ts";
import { AppError, fieldError } from "../errors.ts";
import { readSessionCookies } from "./cookies.ts";
import { burnVerification, hashPassword, verifyPassword } from "./password.ts";

export const SESSION_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** lastUsedAt is written at most this often per session, so busy clients do not write on every request. */
const TOUCH_EVERY_MS = 5 * 60 * 1000;

/** Names of this shape belong to the lab's bot accounts; people cannot sign up with them. */
export const BOT_NAME = /^bot-/i;

export interface Authenticated {
  user: UserDTO;
  sessionId: string;
  expiresAt: Date;
}

export type SessionService = ReturnType<typeof createSessionService>;

/** The session id stored in the database for a token: its SHA-256, so a leaked table holds no usable token. */
export function sessionIdOf(token: string): string {
  return createHash("sha256").update(token).digest("base64url");
}

function toUser(row: { id: number; name: string; isBot: boolean }): UserDTO {
  return row.isBot ? { id: row.id, name: row.name, bot: true } : { id: row.id, name: row.name };
}

/**
 * Accounts and server-side sessions. Hand-written on purpose, following the session guide Lucia's author
 * published when retiring the library (an opaque 256-bit random token, only its hash stored, an expiry and a
 * last-use time): the auth libraries that are kept (better-auth, Auth.js) own their routes, cookies and tables,
 * want e-mail or OAuth identities, and do not reach a custom Socket.IO handshake; express-session needs Express.
 * What a library does better is used from one: argon2id (@node-rs/argon2) and cookie parsing (`cookie`).
 */
export function createSessionService({ db, now = () => Date.now() }: { db: Db; now?: () => number }) {
  async function findByName(name: string) {
    const rows = await db.$queryRaw<{ id: number; name: string; isBot: boolean; passwordHash: string | null }[]>`
      SELECT "id", "name", "isBot", "passwordHash" FROM "User" WHERE LOWER("name") = LOWER(${name}) LIMIT 1`;
    return rows[0] ?? null;
  }

  /** A new session for a user: the token goes to the client once and is never stored. */
  async function createSession(userId: number): Promise<{ token: string; sessionId: string; expiresAt: Date }> {
    const token = randomBytes(32).toString("base64url");
    const sessionId = sessionIdOf(token);
    const expiresAt = new Date(now() + SESSION_TTL_MS);
    await db.session.create({ data: { id: sessionId, userId, expiresAt, lastUsedAt: new Date(now()) } });
    return { token, sessionId, expiresAt };
  }

  /**
   * Creates an account and signs it in; a name taken in any letter case is `conflict`, and so is one that looks
   * like a taken name (the same skeleton: "aIice" for "alice", see the migration name_lookalikes). Sign-ups of
   * look-alikes wait for each other on a lock of their skeleton, so two sent at once cannot both pass the check.
   */
  async function signUp(name: string, password: string): Promise<{ user: UserDTO; token: string }> {
    if (BOT_NAME.test(name))
      throw fieldError("invalid", "name", "Names starting with 'bot-' are kept for the lab's bots.");
    if (await findByName(name)) throw fieldError("conflict", "name", `The name ${name} is taken.`);
    const passwordHash = await hashPassword(password);
    let user: UserDTO;
    try {
      user = await db.$transaction(async (tx) => {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(tally_name_skeleton(${name})))`;
        const alike = await tx.$queryRaw<{ name: string }[]>`
          SELECT "name" FROM "User" WHERE tally_name_skeleton("name") = tally_name_skeleton(${name}) LIMIT 1`;
        if (alike.length > 0) {
          const same = alike[0]!.name.toLowerCase() === name.toLowerCase();
          throw fieldError(
            "conflict",
            "name",
            same ? `The name ${name} is taken.` : `The name ${name} looks like a taken one.`,
          );
        }
        return tx.user.create({ data: { name, passwordHash }, select: { id: true, name: true } });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw fieldError("conflict", "name", `The name ${name} is taken.`);
      throw err;
    }
    const { token } = await createSession(user.id);
    return { user, token };
  }

  /**
   * Checks a name and password. An unknown name, a bot and a wrong password all cost one argon2 verification and
   * answer the same `unauthorized`, so neither the answer nor its timing tells whether the name exists.
   */
  async function signIn(name: string, password: string): Promise<{ user: UserDTO; token: string }> {
    const row = await findByName(name);
    const ok = row?.passwordHash ? await verifyPassword(row.passwordHash, password) : await burnVerification(password);
    if (!row || !ok) throw new AppError("unauthorized", "Wrong name or password.");
    const { token } = await createSession(row.id);
    return { user: toUser(row), token };
  }

  /**
   * The session behind a socket `auth.token`, a bearer header or the session cookie, or null. Malformed
   * candidates are skipped, so a planted bad cookie never hides a valid bearer token.
   */
  async function authenticate(input: {
    token?: unknown;
    authorization?: string;
    cookie?: string;
  }): Promise<Authenticated | null> {
    const bearer = input.authorization?.match(/^Bearer\s+(\S+)$/i)?.[1];
    const candidates = [
      typeof input.token === "string" ? input.token : undefined,
      bearer,
      ...readSessionCookies(input.cookie),
    ];
    for (const token of candidates) {
      if (!token || !/^[A-Za-z0-9_-]{43}$/.test(token)) continue;
      const sessionId = sessionIdOf(token);
      const session = await db.session.findUnique({
        where: { id: sessionId },
        select: { expiresAt: true, lastUsedAt: true, user: { select: { id: true, name: true, isBot: true } } },
      });
      if (!session || session.expiresAt.getTime() <= now()) continue;
      if (now() - session.lastUsedAt.getTime() > TOUCH_EVERY_MS) {
        await db.session.updateMany({ where: { id: sessionId }, data: { lastUsedAt: new Date(now()) } });
      }
      return { user: toUser(session.user), sessionId, expiresAt: session.expiresAt };
    }
    return null;
  }

  /** Ends one session; returns whether it existed. */
  async function revoke(sessionId: string): Promise<boolean> {
    const { count } = await db.session.deleteMany({ where: { id: sessionId } });
    return count > 0;
  }

  /** Ends every session of a user (sign out everywhere); returns their ids so their sockets can be dropped. */
  async function revokeAll(userId: number): Promise<string[]> {
    return db.$transaction(async (tx) => {
      const sessions = await tx.session.findMany({ where: { userId }, select: { id: true } });
      await tx.session.deleteMany({ where: { id: { in: sessions.map((s) => s.id) } } });
      return sessions.map((s) => s.id);
    });
  }

  /** Of the given session ids, those that are still valid (after a lost revocation broadcast). */
  async function stillValid(sessionIds: string[]): Promise<Set<string>> {
    if (sessionIds.length === 0) return new Set();
    const rows = await db.session.findMany({
      where: { id: { in: sessionIds }, expiresAt: { gt: new Date(now()) } },
      select: { id: true },
    });
    return new Set(rows.map((r) => r.id));
  }

  /** Removes expired sessions (run now and then; an expired session is refused anyway). */
  async function purgeExpired(): Promise<number> {
    const { count } = await db.session.deleteMany({ where: { expiresAt: { lte: new Date(now()) } } });
    return count;
  }

  /** Sets a password, for seeding demo accounts. */
  async function setPassword(userId: number, password: string): Promise<void> {
    await db.user.update({ where: { id: userId }, data: { passwordHash: await hashPassword(password) } });
  }

  return { signUp, signIn, authenticate, createSession, revoke, revokeAll, stillValid, purgeExpired, setPassword };
}
