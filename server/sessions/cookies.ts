import { parseCookie, stringifySetCookie } from "cookie";

export const SESSION_COOKIE = "tally_session";

export interface CookiePolicy {
  /** Set the Secure flag (behind HTTPS: SECURE_COOKIES=1). */
  secure: boolean;
  sameSite: "lax" | "strict";
}

/** How many session cookies of one request are looked up (the first ones the browser sends). */
export const MAX_SESSION_COOKIES = 3;

/**
 * The session tokens in a Cookie header, in the order sent, each pair parsed by the `cookie` package. A browser
 * sends every cookie of that name whose path matches, longest path first, so a same-site page can plant one with
 * `Path=/api` before the real one: each is a candidate, and a malformed one (say `%E0%A4%A`) is none, never an
 * error, so neither hides a valid token.
 */
export function readSessionCookies(header: string | undefined): string[] {
  if (!header) return [];
  const tokens: string[] = [];
  for (const pair of header.split(";")) {
    if (tokens.length === MAX_SESSION_COOKIES) break;
    try {
      const value = parseCookie(pair)[SESSION_COOKIE];
      if (value && /^[A-Za-z0-9_-]{1,128}$/.test(value)) tokens.push(value);
    } catch {
      // malformed: no cookie
    }
  }
  return tokens;
}

/** The Set-Cookie value that stores (or, with `maxAgeS` 0, clears) the session token. */
export function sessionCookie(token: string, maxAgeS: number, policy: CookiePolicy): string {
  return stringifySetCookie({
    name: SESSION_COOKIE,
    value: token,
    path: "/",
    httpOnly: true,
    sameSite: policy.sameSite,
    secure: policy.secure,
    maxAge: maxAgeS,
  });
}
