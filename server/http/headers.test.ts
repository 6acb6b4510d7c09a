import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_SESSION_COOKIES, sessionCookie, readSessionCookies } from "../sessions/cookies.ts";
import { createSecurityHeaders } from "./headers.ts";

let server: Server | undefined;
afterEach(() => server?.close());

/** A real HTTP server answering with the headers and echoing the CSP it handed on through the request. */
async function serve(options: { hsts: boolean; dev: boolean }): Promise<string> {
  const headers = createSecurityHeaders(options);
  server = createServer((req, res) => {
    void headers(req, res).then(() => res.end(req.headers["content-security-policy"] ?? ""));
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

describe("security headers", () => {
  it("send a fresh script nonce per response and hand the same policy to Next.js through the request", async () => {
    const url = await serve({ hsts: false, dev: false });
    const [a, b] = [await fetch(url), await fetch(url)];
    const policy = a.headers.get("content-security-policy")!;
    expect(await a.text()).toBe(policy);
    const nonce = /'nonce-([^']+)'/.exec(policy)?.[1];
    expect(nonce).toHaveLength(24);
    expect(b.headers.get("content-security-policy")).not.toContain(nonce);
    expect(policy).not.toMatch(/unsafe-eval/);
    expect(a.headers.get("strict-transport-security")).toBeNull();
  });

  it("add HSTS behind HTTPS and 'unsafe-eval' only in development", async () => {
    const url = await serve({ hsts: true, dev: true });
    const res = await fetch(url);
    expect(res.headers.get("strict-transport-security")).toBe("max-age=31536000; includeSubDomains");
    expect(res.headers.get("content-security-policy")).toMatch(
      /script-src 'nonce-[^']+' 'strict-dynamic' 'unsafe-eval'/,
    );
  });
});

describe("the session cookie", () => {
  it("is HttpOnly with the configured SameSite, and Secure when asked", () => {
    expect(sessionCookie("abc", 60, { secure: false, sameSite: "lax" })).toBe(
      "tally_session=abc; Max-Age=60; Path=/; HttpOnly; SameSite=Lax",
    );
    expect(sessionCookie("abc", 60, { secure: true, sameSite: "strict" })).toBe(
      "tally_session=abc; Max-Age=60; Path=/; HttpOnly; Secure; SameSite=Strict",
    );
  });

  it("is read by a real parser; anything malformed is no cookie; every one of the name is a candidate", () => {
    const token = "A".repeat(43);
    expect(readSessionCookies(`a=1; tally_session=${token}; b=2`)).toEqual([token]);
    expect(readSessionCookies("tally_sessionx=1")).toEqual([]);
    expect(readSessionCookies(undefined)).toEqual([]);
    for (const bad of ["%E0%A4%A", "%", "a b", '"x"', "x".repeat(200)]) {
      expect(readSessionCookies(`tally_session=${bad}`)).toEqual([]);
      expect(readSessionCookies(`tally_session=${bad}; tally_session=${token}`)).toEqual([token]);
    }
    const planted = "B".repeat(43);
    expect(readSessionCookies(`tally_session=${planted}; x=1; tally_session=${token}`)).toEqual([planted, token]);
    const many = Array.from({ length: 10 }, (_, i) => `tally_session=${String(i).repeat(43)}`).join("; ");
    expect(readSessionCookies(many)).toHaveLength(MAX_SESSION_COOKIES);
  });
});
