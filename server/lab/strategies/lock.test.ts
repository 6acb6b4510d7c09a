import { describe, expect, it } from "vitest";
import { lockTakenTrace } from "./lock.ts";

describe("the lock strategy's story line", () => {
  it("counts the busy tries in words that agree with the count", () => {
    expect(lockTakenTrace(300, 0)).toBe("SET lock NX PX 300 → OK");
    expect(lockTakenTrace(300, 1)).toBe("SET lock NX PX 300 → OK after 1 busy try");
    expect(lockTakenTrace(300, 2)).toBe("SET lock NX PX 300 → OK after 2 busy tries");
  });
});
