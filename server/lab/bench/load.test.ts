import { describe, expect, it } from "vitest";
import { dueBy, summarizeLoad, type Sent } from "./load.ts";

describe("dueBy", () => {
  it("sends the first message at once and then one per 1/rate seconds, never more than the window holds", () => {
    expect(dueBy(0, 100, 400)).toBe(1);
    expect(dueBy(9.9, 100, 400)).toBe(1);
    expect(dueBy(10, 100, 400)).toBe(2);
    expect(dueBy(15, 1000, 4000)).toBe(16);
    expect(dueBy(60_000, 100, 400)).toBe(400);
  });
});

describe("summarizeLoad", () => {
  const arrivals = new Map([
    ["0:1", 110],
    ["1:1", 150],
    ["0:2", 205],
    ["1:2", 400],
  ]);
  const base = {
    mode: "open" as const,
    offeredPerSec: 2,
    seconds: 2,
    elapsedMs: 2500.4,
    arrivedAt: (k: number, n: number) => arrivals.get(`${k}:${n}`),
    targetP99Ms: 50,
  };

  it("times each acknowledged send to its arrival and counts what was carried", () => {
    const sends: Sent[] = [
      { k: 0, at: 100, n: 1 },
      { k: 1, at: 100, n: 1 },
      { k: 0, at: 200, n: 2 },
      { k: 1, at: 200, failed: true },
      { k: 1, at: 300, n: 3 },
    ];
    expect(summarizeLoad({ ...base, offered: 5, sends })).toEqual({
      mode: "open",
      offeredPerSec: 2,
      seconds: 2,
      elapsedMs: 2500,
      offered: 5,
      sent: 5,
      acked: 4,
      failed: 1,
      delivered: 3,
      carried: 0.6,
      p50Ms: 10,
      p99Ms: 50,
      maxMs: 50,
      held: false,
    });
  });

  it("holds a rate only with every offered send delivered, none refused, and p99 under the target", () => {
    const sends: Sent[] = [
      { k: 0, at: 100, n: 1 },
      { k: 0, at: 200, n: 2 },
    ];
    expect(summarizeLoad({ ...base, offered: 2, sends }).held).toBe(true);
    // One in flight: the schedule offered more than the conversations could send.
    expect(summarizeLoad({ ...base, mode: "one-in-flight", offered: 4, sends })).toMatchObject({
      sent: 2,
      carried: 0.5,
      held: false,
    });
    expect(summarizeLoad({ ...base, offered: 2, sends, targetP99Ms: 10 }).held).toBe(false);
    expect(summarizeLoad({ ...base, offered: 2, sends: [...sends, { k: 1, at: 0, failed: true }] }).held).toBe(false);
  });

  it("reports zeros for a window with nothing sent", () => {
    expect(summarizeLoad({ ...base, offered: 0, sends: [] })).toMatchObject({
      delivered: 0,
      carried: 0,
      p50Ms: 0,
      maxMs: 0,
    });
  });
});
