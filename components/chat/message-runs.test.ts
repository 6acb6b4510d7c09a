import { describe, expect, it } from "vitest";
import { continuesRun, RUN_GAP_MS } from "./message-runs";

const at = (minutes: number) => new Date(2026, 11, 6, 12, minutes).toISOString();
const msg = (seq: number, senderId: number, createdAt = at(seq)) => ({ seq, senderId, createdAt });

describe("continuesRun", () => {
  it("joins the next message of the same sender within a few minutes", () => {
    expect(continuesRun(msg(1, 1), msg(2, 1), false)).toBe(true);
  });

  it("starts a run at the first message, at another sender, and below the divider", () => {
    expect(continuesRun(undefined, msg(1, 1), false)).toBe(false);
    expect(continuesRun(msg(1, 1), msg(2, 2), false)).toBe(false);
    expect(continuesRun(msg(1, 1), msg(2, 1), true)).toBe(false);
  });

  it("starts a run after a gap in seq, which may hide someone else's messages", () => {
    expect(continuesRun(msg(1, 1), msg(3, 1), false)).toBe(false);
  });

  it("starts a run after a pause as long as RUN_GAP_MS", () => {
    const first = msg(1, 1, at(0));
    const justUnder = new Date(new Date(first.createdAt).getTime() + RUN_GAP_MS - 1).toISOString();
    const exactly = new Date(new Date(first.createdAt).getTime() + RUN_GAP_MS).toISOString();
    expect(continuesRun(first, msg(2, 1, justUnder), false)).toBe(true);
    expect(continuesRun(first, msg(2, 1, exactly), false)).toBe(false);
  });

  it("starts a run on a new day, even a minute later", () => {
    const late = new Date(2026, 11, 6, 23, 59, 30).toISOString();
    const early = new Date(2026, 11, 7, 0, 0, 30).toISOString();
    expect(continuesRun(msg(1, 1, late), msg(2, 1, early), false)).toBe(false);
  });

  it("starts a run when the clock went backwards (times from two servers)", () => {
    expect(continuesRun(msg(1, 1, at(10)), msg(2, 1, at(9)), false)).toBe(false);
  });
});
