import { describe, expect, it } from "vitest";
import { changedColumns } from "./story-view";

describe("the story columns a step changes", () => {
  it("names every column that still has steps, and leaves a finished one alone", () => {
    // The crash story: naive 7 steps, lock 11, WATCH 9, Lua 5.
    const lengths = [7, 11, 9, 5];
    expect(changedColumns(lengths, 1, 2)).toEqual([0, 1, 2, 3]);
    expect(changedColumns(lengths, 5, 6)).toEqual([0, 1, 2]);
    // Step 8: naive finished at 7, so the column to show is lock's, the second (on a phone, below the first).
    expect(changedColumns(lengths, 7, 8)).toEqual([1, 2]);
    expect(changedColumns(lengths, 10, 11)).toEqual([1]);
  });

  it("works backwards and over jumps as well", () => {
    const lengths = [7, 11, 9, 5];
    expect(changedColumns(lengths, 8, 7)).toEqual([1, 2]);
    expect(changedColumns(lengths, 1, 11)).toEqual([0, 1, 2, 3]);
    expect(changedColumns(lengths, 11, 11)).toEqual([]);
  });
});
