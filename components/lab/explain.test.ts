import { describe, expect, it } from "vitest";
import type { LabStrategyName, LabStrategyResult } from "@/server/contracts";
import { DEFAULT_WORKLOAD } from "@/server/contracts/lab-defaults";
import {
  describeRunSettings,
  FAULT_PRESETS,
  formatMs,
  GLOSSARY,
  matchingPreset,
  notRun,
  RESULT_COLUMNS,
  summarize,
} from "./explain";

function result(
  strategy: LabStrategyName,
  drift: [number, number],
  wrong: [number, number] = drift,
  lost = 0,
): LabStrategyResult {
  return {
    strategy,
    operations: 100,
    completed: 100 - lost,
    seconds: 1,
    opsPerSec: 100,
    p50Ms: 1,
    p99Ms: 2,
    retries: 0,
    lockWaits: 0,
    aborted: 0,
    lost,
    drift: { users: drift[0], amount: drift[1] },
    wrong: { counts: wrong[0], totals: wrong[1] },
  };
}

describe("the run's summary", () => {
  it("names who drifted and by how much, who kept badges equal to their parts, and why zero drift can be wrong", () => {
    const text = summarize(
      [
        result("naive", [12, 37], [9, 12]),
        result("lock", [0, 0], [2, 1]),
        result("watch", [0, 0], [5, 3]),
        result("lua", [0, 0]),
      ],
      { redisRestart: false },
    );
    expect(text).toMatch(
      /^Naive drifted on 12 users \(badges off by 37 in all\); lock, WATCH and Lua kept every badge equal to the sum of its conversations\./,
    );
    expect(text).toContain(
      "Lock and WATCH still show ≠ truth (lock 2 counts, 1 badge; WATCH 5 counts, 3 badges) with zero drift: their badges add up",
    );
    expect(text).toContain("out of order and a counter can't tell");
    expect(text).toContain("a read that lands after a send it never saw clears that message too");
    expect(text).toMatch(
      /Lua also matched the truth everywhere: its max-registers end in the same state whatever the order\.$/,
    );
    expect(text).not.toContain("restart");
  });

  it("says so when every strategy that ran was exact, without a why", () => {
    expect(summarize([result("watch", [0, 0]), result("lua", [0, 0])], { redisRestart: false })).toBe(
      "WATCH and Lua kept every badge equal to the sum of its conversations.",
    );
  });

  it("lists several drifting strategies, one user in the singular, lost operations and the restart", () => {
    const text = summarize(
      [result("naive", [1, 2], [1, 1], 3), result("lock", [4, 5]), result("watch", [0, 0], [7, 0])],
      { redisRestart: true },
    );
    expect(text).toContain(
      "Naive drifted on 1 user (badges off by 2 in all) and lock drifted on 4 users (badges off by 5 in all); WATCH kept",
    );
    expect(text).toContain("WATCH still shows ≠ truth (7 counts, 0 badges) with zero drift: its badges add up");
    expect(text).toContain("nothing to rebuild from after the Redis restart");
    expect(text).toContain("Naive lost 3 operations after 25 attempts each.");
    expect(text).not.toContain("matched the truth");
  });

  it("has something to say about an empty run", () => {
    expect(summarize([], { redisRestart: false })).toBe("No strategy finished.");
  });
});

describe("fault presets", () => {
  it("cover none, a crash between the writes, a slow server and everything", () => {
    expect(FAULT_PRESETS.map((p) => p.label)).toEqual(
      expect.arrayContaining(["No faults", "Crash between the writes", "Slow server", "Everything"]),
    );
  });

  it("are each recognised from the fields they set, and 'none' is the default workload's faults", () => {
    for (const p of FAULT_PRESETS) expect(matchingPreset(p.faults)).toBe(p.id);
    expect(matchingPreset(DEFAULT_WORKLOAD.faults)).toBe("none");
  });

  it("set only what their names promise", () => {
    const by = Object.fromEntries(FAULT_PRESETS.map((p) => [p.id, p.faults]));
    expect(by.crash).toMatchObject({ stepDelayMs: 0, redisRestart: false });
    expect(by.crash!.stepFailureRate).toBeGreaterThan(0);
    expect(by.slow).toMatchObject({ stepFailureRate: 0, workerDeathRate: 0, redisRestart: false });
    expect(by.slow!.stepDelayMs).toBeGreaterThan(0);
    const everything = by.everything!;
    expect(everything.stepFailureRate * everything.stepDelayMs * everything.workerDeathRate).toBeGreaterThan(0);
    expect(everything.redisRestart).toBe(true);
  });

  it("matches nothing once a field is changed by hand", () => {
    expect(matchingPreset({ ...FAULT_PRESETS[1]!.faults, stepFailureRate: 0.11 })).toBeNull();
  });
});

describe("the glossary", () => {
  it("explains every term the issue names and every results column", () => {
    const terms = GLOSSARY.map((g) => g.term).join(" | ");
    for (const word of ["SET NX PX", "max-register", "hot user", "drift", "truth", "WATCH", "Lua", "naive"]) {
      expect(terms).toContain(word);
    }
    const headings = RESULT_COLUMNS.map((c) => c.heading).join(" | ");
    for (const word of ["aborted", "Σ", "≠ truth", "retries", "lost", "lock waits", "p99"])
      expect(headings).toContain(word);
    for (const entry of [...GLOSSARY.map((g) => g.meaning), ...RESULT_COLUMNS.map((c) => c.meaning)]) {
      expect(entry.length).toBeGreaterThan(10);
    }
  });
});

describe("a stopped run", () => {
  it("names the strategies it never reached", () => {
    expect(notRun(["naive", "lock", "watch", "lua"], [result("naive", [3, 5])])).toBe(
      "Lock, WATCH and Lua did not run.",
    );
    expect(notRun(["naive", "lua"], [result("naive", [0, 0]), result("lua", [0, 0])])).toBeNull();
  });
});

describe("a latency in the results table", () => {
  it("keeps three significant figures at most, and whole milliseconds from 100 ms up", () => {
    expect(formatMs(441.381)).toBe("441");
    expect(formatMs(706.43)).toBe("706");
    expect(formatMs(99.96)).toBe("100");
    expect(formatMs(70.643)).toBe("70.6");
    expect(formatMs(12)).toBe("12");
    expect(formatMs(2.456)).toBe("2.46");
    expect(formatMs(0.3125)).toBe("0.31");
    expect(formatMs(0)).toBe("0");
  });

  it("describes a watched run's settings in one sentence", () => {
    const faults = { ...DEFAULT_WORKLOAD.faults, stepFailureRate: 0.03, stepDelayMs: 5, stepDelayRate: 1 };
    expect(
      describeRunSettings(["naive", "lua"], { ...DEFAULT_WORKLOAD, operations: 2000, users: 10, workers: 4, faults }),
    ).toBe(
      "2000 operations per strategy (naive, Lua) over 10 users, 4 workers; faults: the second step fails on 3%, " +
        "5 ms between the steps on 100%.",
    );
    const none = { ...DEFAULT_WORKLOAD.faults, stepFailureRate: 0, stepDelayMs: 0, workerDeathRate: 0 };
    expect(describeRunSettings(["watch"], { ...DEFAULT_WORKLOAD, faults: { ...none, redisRestart: true } })).toMatch(
      /\(WATCH\) .*; faults: Redis restarts halfway\.$/,
    );
    expect(describeRunSettings(["lock"], { ...DEFAULT_WORKLOAD, faults: none })).toMatch(/; faults: none\.$/);
  });
});
