import { parseCookie, stringifySetCookie } from "cookie";

export const SESSION_COOKIE = "tally_session";

export interface CookiePolicy {
  /** Set the Secure flag (behind HTTPS: SECURE_COOKIES=1). */
  secure: boolean;
  sameSite: "lax" | "strict";
}

/**
 * The session token from a Cookie header, parsed by the `cookie` package. A malformed header or value (say
 * `%E0%A4%A`, planted by a same-site page) is no cookie: never an error, so a valid bearer token still works.
 */
export function readSessionCookie(header: string | undefined): string | undefined {
  if (!header) return undefined;
  try {
    const value = parseCookie(header)[SESSION_COOKIE];
    return value && /^[A-Za-z0-9_-]{1,128}$/.test(value) ? value : undefined;
  } catch {
    return undefined;
  }
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
