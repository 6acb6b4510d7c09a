import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { measureDiskFlush, summariseFlushes } from "./disk.ts";

describe("the disk's flush", () => {
  it("summarises flush times: percentiles of the sorted times, the slowest, and how many passed 50 and 100 ms", () => {
    // 1000 flushes: 990 of 0.2 ms, then 7 of 60 ms and 3 of 250 ms, given out of order.
    const times = [...Array<number>(7).fill(60), ...Array<number>(990).fill(0.2), ...Array<number>(3).fill(250)];
    expect(summariseFlushes(times, 2)).toEqual({
      flushes: 1000,
      gapMs: 2,
      p50Ms: 0.2,
      p99Ms: 0.2,
      p999Ms: 250,
      maxMs: 250,
      over50Ms: 10,
      over100Ms: 3,
    });
    expect(summariseFlushes([], 2)).toMatchObject({ flushes: 0, maxMs: 0, over50Ms: 0 });
  });

  it("flushes a real file for the time asked, and leaves nothing behind", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "disk-test-"));
    try {
      const result = await measureDiskFlush({ seconds: 0.2, gapMs: 1, dir });
      expect(result.flushes).toBeGreaterThan(0);
      expect(result.maxMs).toBeGreaterThanOrEqual(result.p50Ms);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
