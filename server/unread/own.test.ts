import { describe, expect, it } from "vitest";
import { overOwn } from "./unread.service.ts";

describe("overOwn: the cursor moved over the own messages right above it", () => {
  it("moves over a run of own messages right above the cursor and keeps the rest", () => {
    expect(overOwn(1, [2, 3, 5], 6)).toEqual({ lastReadSeq: 3, ownSeqs: [5] });
  });

  it("stays where it is when the next message is someone else's", () => {
    expect(overOwn(1, [3, 4], 4)).toEqual({ lastReadSeq: 1, ownSeqs: [3, 4] });
  });

  it("takes the seqs in any order and ignores those beyond lastSeq", () => {
    expect(overOwn(0, [3, 1, 2], 2)).toEqual({ lastReadSeq: 2, ownSeqs: [] });
  });
});
