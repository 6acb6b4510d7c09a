import { createHmac, timingSafeEqual } from "node:crypto";

const TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;

function sign(secret: string, payload: string): string {
  return createHmac("sha256", secret).update(payload).digest("base64url");
}

/** A stateless session token: `<userId>.<issuedAt base36>.<HMAC-SHA256>`. */
export function issueToken(secret: string, userId: number, now = Date.now()): string {
  const payload = `${userId}.${now.toString(36)}`;
  return `${payload}.${sign(secret, payload)}`;
}

/** The user id the token was issued for, or null when it is malformed, forged or expired. */
export function verifyToken(secret: string, token: string, now = Date.now()): number | null {
  const match = /^(\d{1,10})\.([0-9a-z]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return null;
  const [, id, issued, mac] = match as unknown as [string, string, string, string];
  const expected = Buffer.from(sign(secret, `${id}.${issued}`));
  const given = Buffer.from(mac);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
  const issuedAt = parseInt(issued, 36);
  if (!(issuedAt <= now + 60_000 && now - issuedAt < TOKEN_TTL_MS)) return null;
  const userId = Number(id);
  return Number.isSafeInteger(userId) && userId > 0 ? userId : null;
}

export const SESSION_COOKIE = "tally_session";
export const SESSION_MAX_AGE_S = TOKEN_TTL_MS / 1000;

/** Reads one cookie from a Cookie header without a parser dependency. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}
