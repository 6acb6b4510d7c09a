import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { throttle } from "./throttle.ts";

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe("throttle", () => {
  it("runs at once, folds a burst into one run when the interval ends, and is quiet after", () => {
    let runs = 0;
    const call = throttle(() => runs++, 2000);
    call();
    expect(runs).toBe(1);
    for (let i = 0; i < 100; i++) call(); // a storm of subscriber events
    expect(runs).toBe(1);
    vi.advanceTimersByTime(2000);
    expect(runs).toBe(2);
    vi.advanceTimersByTime(10_000);
    expect(runs).toBe(2);
    // Quiet for a whole interval: the next call runs at once again.
    call();
    expect(runs).toBe(3);
    call.cancel();
    call();
    expect(runs).toBe(4);
  });
});
