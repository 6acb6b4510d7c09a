import { describe, expect, it } from "vitest";
import { readEnv as read, unreadTtlMs } from "./env.ts";

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

describe("security settings", () => {
  it("reads origins, cookie flags and limit overrides", () => {
    const env = readEnv({
      ALLOWED_ORIGINS: "https://chat.example.com, http://localhost:3000/",
      SECURE_COOKIES: "1",
      RATE_LIMITS: "signUp=200/1h,send=10/2s",
    });
    expect(env.ALLOWED_ORIGINS).toEqual(["https://chat.example.com", "http://localhost:3000"]);
    expect(env.SECURE_COOKIES).toBe("1");
    expect(env.RATE_LIMITS).toEqual({ signUp: { points: 200, durationS: 3600 }, send: { points: 10, durationS: 2 } });
  });

  it("names the variable of a bad origin or an unknown limit", () => {
    expect(() => readEnv({ ALLOWED_ORIGINS: "chat.example.com" })).toThrow(/ALLOWED_ORIGINS/);
    expect(() => readEnv({ RATE_LIMITS: "sendz=1/1s" })).toThrow(/RATE_LIMITS.*unknown limit sendz/s);
    expect(() => readEnv({ RATE_LIMITS: "send=ten" })).toThrow(/RATE_LIMITS/);
  });
});
