import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  cpuBetween,
  parseProcStat,
  parseVoluntarySwitches,
  readProcesses,
  readSleeps,
  sleepsBetween,
  treeMembers,
  treeTicks,
  type CpuSample,
  type ProcessSleeps,
  type ProcStat,
} from "./cpu.ts";

/** A /proc/<pid>/stat line with the given name, ppid, utime, stime, cutime, cstime (fields 14–17), start (22). */
function statLine(pid: number, name: string, ppid: number, [u, s, cu, cs]: number[], start = 103697): string {
  const fields = ["S", ppid, pid, pid, 0, -1, 4194304, 100, 0, 0, 0, u, s, cu, cs, 20, 0, 1, 0, start, 3133440];
  return `${pid} (${name}) ${fields.join(" ")}\n`;
}

const proc = (pid: number, ppid: number, ownTicks: number, reapedTicks = 0): ProcStat => ({
  pid,
  ppid,
  ownTicks,
  reapedTicks,
  startTicks: 0,
});

describe("parseProcStat", () => {
  it("reads the parent and the own and reaped CPU ticks", () => {
    expect(parseProcStat(statLine(4242, "postgres", 4000, [120, 30, 7, 3], 5555))).toEqual({
      pid: 4242,
      ppid: 4000,
      ownTicks: 150,
      reapedTicks: 10,
      startTicks: 5555,
    });
  });

  it("counts fields from the last parenthesis, whatever the command name holds", () => {
    const stat = parseProcStat(statLine(7, "postgres: tally (idle) 1 2 3", 1, [5, 6, 0, 0]));
    expect(stat).toEqual({ pid: 7, ppid: 1, ownTicks: 11, reapedTicks: 0, startTicks: 103697 });
  });

  it("refuses a line that is not a stat line", () => {
    expect(() => parseProcStat("no parentheses here")).toThrow(/not a \/proc/);
    expect(() => parseProcStat("12 (short) S 1 2")).toThrow(/field 14 missing/);
  });

  it.runIf(existsSync("/proc/self/stat"))("finds this process and its parent in /proc", () => {
    const self = readProcesses()?.find((p) => p.pid === process.pid);
    expect(self?.ppid).toBe(process.ppid);
  });
});

describe("treeTicks", () => {
  const postmaster = 100;
  const processes = [
    proc(postmaster, 1, 50, 40),
    proc(101, postmaster, 10),
    proc(102, postmaster, 20, 5),
    proc(103, 102, 2),
    proc(200, 1, 999),
    proc(201, 200, 999),
  ];

  it("sums the root, its live descendants and what their exited children left", () => {
    expect(treeTicks(processes, postmaster)).toBe(50 + 40 + 10 + 20 + 5 + 2);
    expect(treeTicks(processes, 102)).toBe(27);
  });

  it("is undefined for a process that is gone", () => {
    expect(treeTicks(processes, 999)).toBeUndefined();
    expect(treeMembers(processes, 999)).toEqual([]);
  });

  it("walks the same tree for its members, the root first", () => {
    expect(treeMembers(processes, postmaster).map((p) => p.pid)).toEqual([postmaster, 102, 103, 101]);
  });

  it("keeps a child's time when the child exits and is reaped", () => {
    const before = treeTicks([proc(postmaster, 1, 50, 0), proc(101, postmaster, 10)], postmaster)!;
    const after = treeTicks([proc(postmaster, 1, 51, 12)], postmaster)!;
    expect(after).toBe(63);
    expect(after).toBeGreaterThanOrEqual(before);
  });
});

describe("sleeps", () => {
  const status = (voluntary: number) =>
    `Name:\tnode\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t${voluntary}\nnonvoluntary_ctxt_switches:\t7\n`;

  it("reads a thread's voluntary context switches, not its involuntary ones", () => {
    expect(parseVoluntarySwitches(status(1234))).toBe(1234);
    expect(parseVoluntarySwitches("Name:\tnode\nnonvoluntary_ctxt_switches:\t7\n")).toBeUndefined();
  });

  it("adds up each process's growth, counting a new process from zero, a reused pid by its start, a drop as none", () => {
    const at = (startTicks: number, sleeps: number): ProcessSleeps => ({ startTicks, sleeps });
    const before = new Map([
      [1, at(10, 100)],
      [2, at(10, 50)],
      [3, at(10, 900)],
      [5, at(10, 50)],
      [6, at(10, 10)],
    ]);
    // 1 grew by 10; 2 exited (its sleeps are gone with it); 3 is a later process under the same pid; 4 is new;
    // 5 lost a thread and counts less than before; 6 is a later process whose count passed the earlier one's.
    const after = new Map([
      [1, at(10, 110)],
      [3, at(99, 5)],
      [4, at(99, 20)],
      [5, at(10, 40)],
      [6, at(99, 30)],
    ]);
    expect(sleepsBetween(before, after)).toBe(10 + 5 + 20 + 0 + 30);
    expect(sleepsBetween(null, after)).toBeNull();
    expect(sleepsBetween(before, null)).toBeNull();
  });

  it.runIf(existsSync("/proc/self/task"))("counts this process going to sleep and waking up", async () => {
    const before = readSleeps(process.pid)!;
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(readSleeps(process.pid)! - before).toBeGreaterThanOrEqual(5);
    expect(readSleeps(2 ** 22 + 1)).toBeUndefined();
  });
});

describe("cpuBetween", () => {
  const sample = (
    selfMs: number,
    trees: [string, number | null][],
    sleeps: [string, Map<number, number> | null][] = [],
    selfSleeps = 0,
  ): CpuSample => ({
    selfMs,
    trees: new Map(trees),
    // Every process started at tick 1 (the same processes at both edges).
    sleeps: new Map(
      sleeps.map(([name, byPid]) => [
        name,
        byPid && new Map([...byPid].map(([pid, n]) => [pid, { startTicks: 1, sleeps: n }])),
      ]),
    ),
    selfSleeps,
  });

  it("gives each process's milliseconds, per delivered message, and the total without the generator", () => {
    const cpu = cpuBetween(
      sample(100, [
        ["A", 1000],
        ["Redis", 50],
      ]),
      sample(160, [
        ["A", 1400],
        ["Redis", 90],
      ]),
      ["A", "Redis"],
      200,
    );
    expect(cpu.processes).toEqual([
      { name: "A", ms: 400, msPerMessage: 2, sleeps: null, sleepsPerMessage: null },
      { name: "Redis", ms: 40, msPerMessage: 0.2, sleeps: null, sleepsPerMessage: null },
    ]);
    expect([cpu.totalMs, cpu.totalMsPerMessage]).toEqual([440, 2.2]);
    expect([cpu.generatorMs, cpu.generatorMsPerMessage]).toEqual([60, 0.3]);
    expect([cpu.totalSleepsPerMessage, cpu.generatorSleepsPerMessage]).toEqual([null, 0]);
  });

  it("gives each process's sleeps per delivered message and their total", () => {
    const cpu = cpuBetween(
      sample(
        0,
        [
          ["A", 0],
          ["PostgreSQL", 0],
        ],
        [
          ["A", new Map([[10, 1000]])],
          [
            "PostgreSQL",
            new Map([
              [20, 5],
              [21, 7],
            ]),
          ],
        ],
        300,
      ),
      sample(
        0,
        [
          ["A", 1],
          ["PostgreSQL", 1],
        ],
        [
          ["A", new Map([[10, 1600]])],
          [
            "PostgreSQL",
            new Map([
              [20, 205],
              [21, 107],
            ]),
          ],
        ],
        500,
      ),
      ["A", "PostgreSQL"],
      200,
    );
    expect(cpu.processes.map((p) => [p.name, p.sleeps, p.sleepsPerMessage])).toEqual([
      ["A", 600, 3],
      ["PostgreSQL", 300, 1.5],
    ]);
    expect([cpu.totalSleepsPerMessage, cpu.generatorSleepsPerMessage]).toEqual([4.5, 1]);
  });

  it("leaves the total unknown when one process could not be read, and per-message figures without messages", () => {
    const cpu = cpuBetween(
      sample(0, [
        ["A", 10],
        ["B", null],
      ]),
      sample(5, [
        ["A", 20],
        ["B", 30],
      ]),
      ["A", "B", "C"],
      0,
    );
    expect(cpu.processes).toEqual([
      { name: "A", ms: 10, msPerMessage: null, sleeps: null, sleepsPerMessage: null },
      { name: "B", ms: null, msPerMessage: null, sleeps: null, sleepsPerMessage: null },
      { name: "C", ms: null, msPerMessage: null, sleeps: null, sleepsPerMessage: null },
    ]);
    expect([cpu.totalMs, cpu.totalMsPerMessage, cpu.generatorMsPerMessage]).toEqual([null, null, null]);
  });
});
