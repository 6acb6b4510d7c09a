import { describe, expect, it } from "vitest";
import type { MemberLeft, MessageDTO } from "@/server/contracts";
import { placeLines } from "./member-lines";

const at = (minute: number) => `2026-12-07T10:${String(minute).padStart(2, "0")}:00.000Z`;
const message = (seq: number, minute: number) => ({ seq, createdAt: at(minute) }) as MessageDTO;
const left = (userId: number, minute: number): MemberLeft => ({ userId, name: `u${userId}`, at: at(minute) });

describe("where 'name left' lines go", () => {
  const items = [message(4, 10), message(5, 20), message(6, 30)];

  it("goes before the first message written after the leave, in the order they left, or after the newest", () => {
    const placed = placeLines(items, [left(2, 25), left(1, 15), left(3, 22), left(9, 31)], true);
    expect([...placed.before]).toEqual([
      [5, [left(1, 15)]],
      [6, [left(3, 22), left(2, 25)]],
    ]);
    expect(placed.after).toEqual([left(9, 31)]);
  });

  it("shows a leave older than the loaded messages only once nothing older is left to load", () => {
    expect([...placeLines(items, [left(1, 5)], false).before]).toEqual([]);
    expect([...placeLines(items, [left(1, 5)], true).before]).toEqual([[4, [left(1, 5)]]]);
  });

  it("puts every leave after the messages of a group that has none loaded", () => {
    expect(placeLines([], [left(1, 5)], true).after).toEqual([left(1, 5)]);
  });

  it("puts someone added right above the first message after the seq they joined at, whatever the clocks say", () => {
    // Message 5 began (its time) before the add and was stored after it (its seq): it is the newcomer's first.
    const added = { userId: 7, name: "u7", by: null, seq: 4, at: at(25) };
    expect([...placeLines(items, [added], true).before]).toEqual([[5, [added]]]);
    expect(placeLines(items, [{ ...added, seq: 6 }], true).after).toEqual([{ ...added, seq: 6 }]);
    // Joined at 2, while the oldest loaded is 4: only once nothing older is left to load.
    expect([...placeLines(items, [{ ...added, seq: 2 }], false).before]).toEqual([]);
    expect([...placeLines(items, [{ ...added, seq: 3 }], false).before]).toEqual([[4, [{ ...added, seq: 3 }]]]);
  });
});
