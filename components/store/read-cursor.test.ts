import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createReadCursor } from "./read-cursor";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const DEBOUNCE = 300;

/** A cursor whose floor follows what it sent, as the store's does (the server acknowledges every read). */
function cursor(options: { floor?: number; debounceMs?: number } = {}) {
  const sent: number[] = [];
  const seen: number[] = [];
  let floor = options.floor ?? 0;
  const c = createReadCursor({
    debounceMs: options.debounceMs ?? DEBOUNCE,
    floor: () => floor,
    send: (seq) => {
      sent.push(seq);
      floor = Math.max(floor, seq);
    },
    onSeen: (seq) => seen.push(seq),
  });
  return {
    c,
    sent,
    seen,
    setFloor(next: number) {
      floor = next;
    },
  };
}

const looking = (onScreen: number) => ({ attending: true, onScreen });

describe("the read cursor", () => {
  it("sends the highest seq on screen, never one beyond it", () => {
    const { c, sent } = cursor();
    c.observe(looking(7));
    vi.advanceTimersByTime(DEBOUNCE);
    expect(sent).toEqual([7]);
    expect(c.seen).toBe(7);
  });

  it("coalesces the reports of one debounce window into one read of the highest", () => {
    const { c, sent, seen } = cursor();
    c.observe(looking(3));
    c.observe(looking(5));
    vi.advanceTimersByTime(DEBOUNCE - 1);
    c.observe(looking(9));
    expect(sent).toEqual([]);
    // The badges count down without waiting for the read.
    expect(seen).toEqual([3, 5, 9]);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual([9]);
    c.observe(looking(12));
    vi.advanceTimersByTime(DEBOUNCE);
    expect(sent).toEqual([9, 12]);
  });

  it("sends at once with no debounce", () => {
    const { c, sent } = cursor({ debounceMs: 0 });
    c.observe(looking(4));
    expect(sent).toEqual([4]);
  });

  it("never goes backwards: scrolling up sends nothing and keeps what was seen", () => {
    const { c, sent, seen } = cursor();
    c.observe(looking(10));
    vi.advanceTimersByTime(DEBOUNCE);
    c.observe(looking(4));
    c.observe(looking(10));
    vi.advanceTimersByTime(10 * DEBOUNCE);
    expect(sent).toEqual([10]);
    expect(seen).toEqual([10]);
    expect(c.seen).toBe(10);
  });

  it("never sends at or below what the server already has", () => {
    const { c, sent } = cursor({ floor: 20 });
    c.observe(looking(15));
    c.observe(looking(20));
    vi.advanceTimersByTime(10 * DEBOUNCE);
    expect(sent).toEqual([]);
    c.observe(looking(21));
    vi.advanceTimersByTime(DEBOUNCE);
    expect(sent).toEqual([21]);
  });

  it("does not send a read the floor overtook while it waited (another tab read further)", () => {
    const { c, sent, setFloor } = cursor();
    c.observe(looking(5));
    setFloor(8);
    vi.advanceTimersByTime(DEBOUNCE);
    expect(sent).toEqual([]);
  });

  it.each([
    ["hidden", { visible: false, focused: true }],
    ["unfocused", { visible: true, focused: false }],
    ["hidden and unfocused", { visible: false, focused: false }],
  ])("counts nothing on screen while the window is %s", (_name, window) => {
    const { c, sent, seen } = cursor();
    c.observe({ attending: window.visible && window.focused, onScreen: 30 });
    vi.advanceTimersByTime(10 * DEBOUNCE);
    expect(sent).toEqual([]);
    expect(seen).toEqual([]);
    expect(c.seen).toBe(0);
  });

  it("counts what is on screen when the window is looked at again, not what was on screen before", () => {
    const { c, sent } = cursor();
    c.observe(looking(3));
    vi.advanceTimersByTime(DEBOUNCE);
    c.observe({ attending: false, onScreen: 40 });
    c.observe({ attending: false, onScreen: 12 });
    vi.advanceTimersByTime(DEBOUNCE);
    expect(sent).toEqual([3]);
    c.observe(looking(12));
    vi.advanceTimersByTime(DEBOUNCE);
    expect(sent).toEqual([3, 12]);
  });

  it("still sends what was seen while looking when the window is left before the debounce ends", () => {
    const { c, sent } = cursor();
    c.observe(looking(6));
    c.observe({ attending: false, onScreen: 9 });
    vi.advanceTimersByTime(DEBOUNCE);
    expect(sent).toEqual([6]);
  });

  it("retries a read that failed (the floor went back) at the next measurement while looking, not while hidden", () => {
    const { c, sent, setFloor } = cursor();
    c.observe(looking(6));
    vi.advanceTimersByTime(DEBOUNCE);
    setFloor(0);
    c.observe({ attending: false, onScreen: 6 });
    vi.advanceTimersByTime(DEBOUNCE);
    expect(sent).toEqual([6]);
    c.observe(looking(6));
    vi.advanceTimersByTime(DEBOUNCE);
    expect(sent).toEqual([6, 6]);
  });

  it("flush sends a waiting read at once; cancel drops it", () => {
    const first = cursor();
    first.c.observe(looking(4));
    first.c.flush();
    expect(first.sent).toEqual([4]);
    vi.advanceTimersByTime(DEBOUNCE);
    expect(first.sent).toEqual([4]);

    const second = cursor();
    second.c.observe(looking(4));
    second.c.cancel();
    vi.advanceTimersByTime(DEBOUNCE);
    expect(second.sent).toEqual([]);
  });
});
