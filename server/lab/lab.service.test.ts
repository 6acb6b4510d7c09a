import { describe, expect, it } from "vitest";
import type { LabSample } from "../contracts/lab.ts";
import { thinned } from "./lab.service.ts";

const sample = (strategy: LabSample["strategy"], t: number): LabSample => ({
  runId: "r1",
  strategy,
  t,
  opsPerSec: 0,
  completed: 0,
  drift: { users: 0, amount: 0 },
  badges: [],
});

describe("the samples a run keeps for a page that connects mid-run", () => {
  it("drop every other sample of each strategy, keeping each one's first and newest", () => {
    const kept = thinned([
      sample("naive", 0),
      sample("naive", 1),
      sample("naive", 2),
      sample("naive", 3),
      sample("lock", 0),
      sample("lock", 1),
    ]);
    expect(kept.map((s) => `${s.strategy}@${s.t}`)).toEqual(["naive@0", "naive@2", "naive@3", "lock@0", "lock@1"]);
  });
});
