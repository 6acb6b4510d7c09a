import { describe, expect, it } from "vitest";
import type { WindowCpu } from "./cpu.ts";
import { endToEndReport, percent, significant, table, versus } from "./report.ts";
import type { EndToEndResult, EndToEndWindow } from "./send-to-badge.ts";

describe("table", () => {
  it("pads every column to its widest cell", () => {
    expect(table(["a", "long header"], [["wide cell", 1]])).toBe(
      ["| a         | long header |", "| --------- | ----------- |", "| wide cell | 1           |"].join("\n"),
    );
  });
});

describe("cells", () => {
  it("keeps three significant digits, whole numbers from 100, n/a for the unknown", () => {
    expect([0.045678, 1.2345, 12.345, 123.4, 0].map(significant)).toEqual(["0.0457", "1.23", "12.3", "123", "0"]);
    expect([significant(null), significant(undefined), significant(Number.NaN)]).toEqual(["n/a", "n/a", "n/a"]);
  });

  it("sets the systems side by side", () => {
    expect(versus([4.3, 12, 0.9], (v) => v)).toBe("4.3 / 12 / 0.9");
    expect([percent(1), percent(0.6254), percent(0)]).toEqual(["100%", "62.5%", "0%"]);
  });
});

describe("endToEndReport", () => {
  /** Each process's CPU ms a message; its sleeps a message are ten times that. */
  const cpu = (per: [string, number][]): WindowCpu => ({
    processes: per.map(([name, msPerMessage]) => ({
      name,
      ms: msPerMessage * 100,
      msPerMessage,
      sleeps: msPerMessage * 1000,
      sleepsPerMessage: msPerMessage * 10,
    })),
    totalMs: per.reduce((s, [, v]) => s + v * 100, 0),
    totalMsPerMessage: per.reduce((s, [, v]) => s + v, 0),
    generatorMs: 30,
    generatorMsPerMessage: 0.3,
    totalSleepsPerMessage: per.reduce((s, [, v]) => s + v * 10, 0),
    generatorSleepsPerMessage: 4,
  });
  const window = (p50Ms: number, carried: number, c: WindowCpu | null): EndToEndWindow => ({
    mode: "open",
    offeredPerSec: 1000,
    seconds: 4,
    elapsedMs: 4300,
    offered: 100,
    sent: 100,
    acked: 100,
    failed: 0,
    delivered: carried * 100,
    carried,
    p50Ms,
    p99Ms: p50Ms * 2,
    maxMs: p50Ms * 3,
    held: p50Ms < 10,
    cpu: c,
  });
  const tally = cpu([
    ["instance A", 0.25],
    ["instance B", 0.25],
    ["PostgreSQL", 0.4],
    ["Redis", 0.05],
  ]);
  const floor = cpu([
    ["instance A", 0.1],
    ["instance B", 0.1],
    ["Redis", 0.02],
  ]);
  const result = (rows: EndToEndResult["rows"]): EndToEndResult => ({
    systems: ["Tally", "floor"],
    conversations: 20,
    seconds: 4,
    targetP99Ms: 50,
    rows,
    highestHeldPerSec: [600, 1500],
  });
  const target = { cpuTargetMs: 1, cpuTargetRate: 1000 };

  it("compares the systems row by row and lists each process's CPU per message", () => {
    const text = endToEndReport(
      result([
        { mode: "open", offeredPerSec: 1000, results: [window(4.5, 1, tally), window(1.2, 1, floor)] },
        { mode: "open", offeredPerSec: 1500, results: [window(900, 0.5, tally), window(1.5, 0.98, floor)] },
      ]),
      target,
    ).join("\n");
    expect(text).toContain("| open loop | 1000      | 4.5 / 1.2");
    expect(text).toContain("| 100% / 100%     | 0.95 / 0.22");
    expect(text).toContain("| open loop | 1500      | 900 / 1.5");
    expect(text).toContain("| 50% / 98%");
    expect(text).toMatch(/\| Tally +\| 100 +\| 0\.25 +\| 0\.25 +\| 0\.4 +\| 0\.05 +\| 0\.95 +\| 0\.3 +\|/);
    expect(text).toMatch(/\| floor +\| 100 +\| 0\.1 +\| 0\.1 +\| — +\| 0\.02 +\| 0\.22 +\| 0\.3 +\|/);
    const [, sleeps] = text.split("### Sleeps per delivered message");
    expect(sleeps).toMatch(/\| Tally +\| 100 +\| 2\.5 +\| 2\.5 +\| 4 +\| 0\.5 +\| 9\.5 +\| 4 +\|/);
    expect(sleeps).toMatch(/\| floor +\| 100 +\| 1 +\| 1 +\| — +\| 0\.2 +\| 2\.2 +\| 4 +\|/);
    expect(text).toContain("Tally 600, floor 1500 messages/s");
    expect(text).toContain(
      "at 1000 messages/s (target ≤ 1 ms, instances + PostgreSQL + Redis): open loop 0.95 ms (met)",
    );
  });

  it("judges the latency targets at the target rate from the windows' own figures", () => {
    const text = endToEndReport(
      result([
        { mode: "open", offeredPerSec: 1000, results: [window(4.5, 1, tally), window(1.2, 1, floor)] },
        { mode: "one-in-flight", offeredPerSec: 1000, results: [window(0.9, 0.99, tally), window(0.31, 1, floor)] },
        { mode: "open", offeredPerSec: 1500, results: [window(0.3, 1, tally), window(0.3, 1, floor)] },
      ]),
      target,
    ).join("\n");
    const line = text.split("\n").find((l) => l.startsWith("Tally / floor at 1000 messages/s"));
    expect(line).toBe(
      "Tally / floor at 1000 messages/s (targets: every send carried, p50 and p99 ≤ 3× the floor's): " +
        "open loop: every send acknowledged and delivered (met); p50 4.5 / 1.2 ms, 3.75× (MISSED); " +
        "p99 9 / 2.4 ms, 3.75× (MISSED); " +
        "one in flight: every send acknowledged and delivered (MISSED: 1 of 100 not delivered: " +
        "0 not sent before the window closed, 0 failed, 1 acknowledged but not arrived); " +
        "p50 0.9 / 0.31 ms, 2.9× (met); p99 1.8 / 0.62 ms, 2.9× (met)",
    );
  });

  it("sets a third system (the floor + commit) against the floor, and Tally against it, at the target rate, without a verdict", () => {
    const durable = cpu([
      ["instance A", 0.12],
      ["instance B", 0.12],
      ["PostgreSQL", 0.12],
      ["Redis", 0.03],
    ]);
    const text = endToEndReport(
      {
        ...result([
          {
            mode: "open",
            offeredPerSec: 1000,
            results: [window(1.4, 1, tally), window(0.33, 1, floor), window(0.75, 1, durable)],
          },
          {
            mode: "one-in-flight",
            offeredPerSec: 1000,
            results: [window(1.5, 1, tally), window(0.34, 1, floor), { ...window(0, 0, durable), p99Ms: 0 }],
          },
        ]),
        systems: ["Tally", "floor", "floor + commit"],
        highestHeldPerSec: [1000, 1000, 1000],
      },
      target,
    ).join("\n");
    expect(text).toContain("| p50 ms (Tally / floor / floor + commit) |");
    expect(text).toContain("| 1.4 / 0.33 / 0.75");
    expect(text).toMatch(/\| floor \+ commit +\| 100 +\| 0\.12 +\| 0\.12 +\| 0\.12 +\| 0\.03 +\| 0\.39 +\| 0\.3 +\|/);
    const lines = text.split("\n");
    expect(lines.find((l) => l.startsWith("floor + commit / floor at 1000"))).toBe(
      "floor + commit / floor at 1000 messages/s: open loop: p50 0.75 / 0.33 ms, 2.27×; p99 1.5 / 0.66 ms, 2.27×; " +
        "one in flight: not measured",
    );
    // And Tally against the third system: what Tally does beyond a durable relay.
    expect(lines.find((l) => l.startsWith("Tally / floor + commit at 1000"))).toBe(
      "Tally / floor + commit at 1000 messages/s: open loop: p50 1.4 / 0.75 ms, 1.87×; p99 2.8 / 1.5 ms, 1.87×; " +
        "one in flight: not measured",
    );
    // Tally's verdict still compares it with the floor, not with the third system.
    expect(lines.find((l) => l.startsWith("Tally / floor at 1000"))).toContain("p50 1.4 / 0.33 ms, 4.24× (MISSED)");
  });

  it("judges a ratio of exactly 3× met, one lost send of thousands missed, and an empty window not at all", () => {
    const exact: EndToEndWindow = { ...window(1.05, 1, tally), p99Ms: 3 };
    // carried rounds to 1 in each
    const lost: EndToEndWindow = { ...exact, offered: 4000, sent: 4000, acked: 4000, delivered: 3999, carried: 1 };
    const unsent: EndToEndWindow = { ...exact, offered: 4000, sent: 3997, acked: 3996, failed: 1, delivered: 3996 };
    const empty: EndToEndWindow = { ...window(0, 0, tally), p99Ms: 0 };
    const floorExact: EndToEndWindow = { ...window(0.35, 1, floor), p99Ms: 1 };
    const verdict = (own: EndToEndWindow) =>
      endToEndReport(result([{ mode: "open", offeredPerSec: 1000, results: [own, floorExact] }]), target)
        .find((l) => l.startsWith("Tally / floor at 1000"))!
        .split("): ")[1];
    expect(verdict(exact)).toBe(
      "open loop: every send acknowledged and delivered (met); p50 1.05 / 0.35 ms, 3× (met); p99 3 / 1 ms, 3× (met)",
    );
    expect(verdict(lost)).toContain(
      "(MISSED: 1 of 4000 not delivered: 0 not sent before the window closed, 0 failed, 1 acknowledged but not arrived)",
    );
    expect(verdict(unsent)).toContain(
      "(MISSED: 4 of 4000 not delivered: 3 not sent before the window closed, 1 failed, 0 acknowledged but not arrived)",
    );
    expect(verdict(empty)).toBe("open loop: not measured");
  });

  it("lists the stages of the systems that report them, and no stage table when none does", () => {
    const staged: EndToEndWindow = {
      ...window(4.5, 1, tally),
      stages: [
        { stage: "commit", sends: 4000, meanMs: 1.234, p50Ms: 0.9, p99Ms: 7.5 },
        { stage: "counters", sends: 4000, meanMs: 0.21, p50Ms: 0.15, p99Ms: 1.9 },
      ],
    };
    const text = endToEndReport(
      result([{ mode: "open", offeredPerSec: 1000, results: [staged, window(1.2, 1, floor)] }]),
      target,
    ).join("\n");
    expect(text).toContain("### Where a send's time went, by stage");
    expect(text).toMatch(/\| open loop \| 1000 +\| Tally +\| commit +\| 4000 +\| 1\.23 +\| 0\.9 +\| 7\.5 +\|/);
    expect(text).toMatch(/\| Tally +\| counters +\| 4000 +\| 0\.21 +\| 0\.15 +\| 1\.9 +\|/);
    expect(text).not.toMatch(/\| floor +\| commit/);
    expect(text).not.toContain("Sends per PostgreSQL statement");
    const plain = endToEndReport(
      result([{ mode: "open", offeredPerSec: 1000, results: [window(4.5, 1, tally), window(1.2, 1, floor)] }]),
      target,
    ).join("\n");
    expect(plain).not.toContain("by stage");
  });

  it("lists the sends per PostgreSQL statement of the systems that report them", () => {
    const grouped: EndToEndWindow = {
      ...window(4.5, 1, tally),
      groups: { statements: 3700, sends: 4000, mean: 1.081, p50: 1, p99: 2, lastBound: 64 },
    };
    const text = endToEndReport(
      result([{ mode: "one-in-flight", offeredPerSec: 1000, results: [grouped, window(1.2, 1, floor)] }]),
      target,
    ).join("\n");
    expect(text).toContain("### Sends per PostgreSQL statement");
    expect(text).toMatch(/\| one in flight \| 1000 +\| Tally +\| 3700 +\| 4000 +\| 1\.08 +\| 1 +\| 2 +\|/);
    expect(text).not.toMatch(/\| floor +\| \d+ +\| 4000/);
    const past: EndToEndWindow = {
      ...grouped,
      groups: { statements: 10, sends: 700, mean: 70, p50: 64, p99: Number.POSITIVE_INFINITY, lastBound: 64 },
    };
    const over = endToEndReport(
      result([{ mode: "open", offeredPerSec: 1000, results: [past, window(1.2, 1, floor)] }]),
      target,
    ).join("\n");
    expect(over).toMatch(/\| Tally +\| 10 +\| 700 +\| 70 +\| 64 +\| > 64 +\|/);
  });

  it("says MISSED over the target, and not measured without the rate or without /proc", () => {
    const over = cpu([["instance A", 1.5]]);
    expect(
      endToEndReport(
        result([{ mode: "one-in-flight", offeredPerSec: 1000, results: [window(3, 1, over), window(1, 1, floor)] }]),
        target,
      ),
    ).toContainEqual(expect.stringContaining("one in flight 1.5 ms (MISSED)"));
    expect(
      endToEndReport(
        result([{ mode: "open", offeredPerSec: 1000, results: [window(3, 1, null), window(1, 1, floor)] }]),
        target,
      ),
    ).toContainEqual(expect.stringContaining("open loop n/a ms (not measured)"));
    expect(
      endToEndReport(
        result([{ mode: "open", offeredPerSec: 300, results: [window(3, 1, tally), window(1, 1, floor)] }]),
        target,
      ),
    ).toContainEqual(expect.stringMatching(/: not measured$/));
  });
});
