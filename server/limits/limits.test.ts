import { describe, expect, it } from "vitest";
import { refusalWords, waitWords } from "./limits.ts";

describe("refusalWords", () => {
  it("says when to try again once the wait is a minute or more", () => {
    expect(refusalWords("signUp", 37 * 60_000 - 500)).toBe(
      "Too many new accounts from this address; try again in 37 minutes.",
    );
    expect(refusalWords("signInFailures", 60_000)).toBe(
      "Too many failed sign-ins for this name from this address; try again in 1 minute.",
    );
    expect(refusalWords("labRun", 25 * 60_000)).toBe(
      "Your lab runs have held the server's run slot for their share of the hour; let others run, try again in 25 minutes.",
    );
  });

  it("keeps 'shortly' for a wait under a minute, and adds a sentence where the words name no time", () => {
    expect(refusalWords("sync", 59_999)).toBe("Too many refreshes; try again shortly.");
    expect(refusalWords("send", 800)).toBe("Slow down: too many messages at once.");
    expect(refusalWords("send", 120_000)).toBe("Slow down: too many messages at once. Try again in 2 minutes.");
  });
});

describe("waitWords", () => {
  it("rounds up to minutes, and from an hour and a half to hours and the next ten minutes", () => {
    expect(waitWords(1)).toBe("1 minute");
    expect(waitWords(60_001)).toBe("2 minutes");
    expect(waitWords(89 * 60_000)).toBe("89 minutes");
    expect(waitWords(89 * 60_000 + 1)).toBe("1 hour 30 minutes");
    expect(waitWords(121 * 60_000)).toBe("2 hours 10 minutes");
    expect(waitWords(170 * 60_000 + 1)).toBe("3 hours");
    expect(waitWords(5 * 3_600_000)).toBe("5 hours");
  });
});
