import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cpuBetween, parseProcStat, readProcesses, treeTicks, type CpuSample, type ProcStat } from "./cpu.ts";

/** A /proc/<pid>/stat line with the given name, ppid and utime, stime, cutime, cstime (fields 14–17). */
function statLine(pid: number, name: string, ppid: number, [u, s, cu, cs]: number[]): string {
  const fields = ["S", ppid, pid, pid, 0, -1, 4194304, 100, 0, 0, 0, u, s, cu, cs, 20, 0, 1, 0, 103697, 3133440];
  return `${pid} (${name}) ${fields.join(" ")}\n`;
}

const proc = (pid: number, ppid: number, ownTicks: number, reapedTicks = 0): ProcStat => ({
  pid,
  ppid,
  ownTicks,
  reapedTicks,
});

describe("parseProcStat", () => {
  it("reads the parent and the own and reaped CPU ticks", () => {
    expect(parseProcStat(statLine(4242, "postgres", 4000, [120, 30, 7, 3]))).toEqual({
      pid: 4242,
      ppid: 4000,
      ownTicks: 150,
      reapedTicks: 10,
    });
  });

  it("counts fields from the last parenthesis, whatever the command name holds", () => {
    const stat = parseProcStat(statLine(7, "postgres: tally (idle) 1 2 3", 1, [5, 6, 0, 0]));
    expect(stat).toEqual({ pid: 7, ppid: 1, ownTicks: 11, reapedTicks: 0 });
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
  });

  it("keeps a child's time when the child exits and is reaped", () => {
    const before = treeTicks([proc(postmaster, 1, 50, 0), proc(101, postmaster, 10)], postmaster)!;
    const after = treeTicks([proc(postmaster, 1, 51, 12)], postmaster)!;
    expect(after).toBe(63);
    expect(after).toBeGreaterThanOrEqual(before);
  });
});

describe("cpuBetween", () => {
  const sample = (selfMs: number, trees: [string, number | null][]): CpuSample => ({ selfMs, trees: new Map(trees) });

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
      { name: "A", ms: 400, msPerMessage: 2 },
      { name: "Redis", ms: 40, msPerMessage: 0.2 },
    ]);
    expect([cpu.totalMs, cpu.totalMsPerMessage]).toEqual([440, 2.2]);
    expect([cpu.generatorMs, cpu.generatorMsPerMessage]).toEqual([60, 0.3]);
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
      { name: "A", ms: 10, msPerMessage: null },
      { name: "B", ms: null, msPerMessage: null },
      { name: "C", ms: null, msPerMessage: null },
    ]);
    expect([cpu.totalMs, cpu.totalMsPerMessage, cpu.generatorMsPerMessage]).toEqual([null, null, null]);
  });
});
