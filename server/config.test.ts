import { describe, expect, it } from "vitest";
import { readEnv as read, unreadTtlMs } from "./config.ts";

const readEnv = (vars: Record<string, string>) => read({ NODE_ENV: "test", ...vars });

describe("UNREAD_TTL_DAYS", () => {
  it("is off by default and accepts days, fractions included", () => {
    expect(unreadTtlMs(readEnv({}))).toBe(0);
    expect(unreadTtlMs(readEnv({ UNREAD_TTL_DAYS: "30" }))).toBe(30 * 86_400_000);
    expect(unreadTtlMs(readEnv({ UNREAD_TTL_DAYS: "0.5" }))).toBe(43_200_000);
  });

  it("fails fast, naming the variable, on a bad value", () => {
    expect(() => readEnv({ UNREAD_TTL_DAYS: "-1" })).toThrow(/UNREAD_TTL_DAYS/);
    expect(() => readEnv({ UNREAD_TTL_DAYS: "soon" })).toThrow(/UNREAD_TTL_DAYS/);
  });
});
