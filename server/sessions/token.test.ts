import { describe, expect, it } from "vitest";
import { issueToken, readCookie, verifyToken } from "./token.ts";

const secret = "unit-test-secret-123456";

describe("session tokens", () => {
  it("verifies a token it issued and returns the user id", () => {
    expect(verifyToken(secret, issueToken(secret, 42))).toBe(42);
  });

  it("refuses a token signed with another secret, tampered with, or malformed", () => {
    const token = issueToken(secret, 42);
    expect(verifyToken("another-secret-123456", token)).toBeNull();
    expect(verifyToken(secret, token.replace(/^42\./, "43."))).toBeNull();
    for (const bad of ["", "42", "42.abc", "x.y.z", `${token}x`]) expect(verifyToken(secret, bad)).toBeNull();
  });

  it("expires after 30 days", () => {
    const issued = Date.UTC(2026, 0, 1);
    const token = issueToken(secret, 7, issued);
    expect(verifyToken(secret, token, issued + 29 * 86_400_000)).toBe(7);
    expect(verifyToken(secret, token, issued + 31 * 86_400_000)).toBeNull();
  });

  it("reads one cookie out of a Cookie header", () => {
    expect(readCookie("a=1; tally_session=abc.def; b=2", "tally_session")).toBe("abc.def");
    expect(readCookie("tally_sessionx=1", "tally_session")).toBeUndefined();
    expect(readCookie(undefined, "tally_session")).toBeUndefined();
  });
});
