import { describe, expect, it } from "vitest";
import { tokenBucket } from "./rate-limit.ts";

describe("token bucket", () => {
  it("allows a burst, then refills at the given rate", () => {
    let now = 0;
    const take = tokenBucket(2, 3, () => now);
    expect([take(), take(), take(), take()]).toEqual([true, true, true, false]);
    now += 500;
    expect([take(), take()]).toEqual([true, false]);
    now += 10_000;
    expect([take(), take(), take(), take()]).toEqual([true, true, true, false]);
  });
});
