import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/*
 * CPU time of processes, read from /proc/<pid>/stat (Linux). Not pidusage: it reports one process at a time, and
 * PostgreSQL is a tree (the postmaster and a backend per connection, plus its helpers) whose exited children's
 * time only shows in the parent's cutime/cstime, which pidusage leaves out. Reading the file is a few lines.
 */

/** One line of /proc/<pid>/stat, in clock ticks. */
export interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime: the process's own threads. */
  ownTicks: number;
  /** cutime + cstime: its children that exited and were reaped (each with its own reaped children). */
  reapedTicks: number;
  /** When it started, in clock ticks after boot: tells a process from a later one under the same pid. */
  startTicks: number;
}

/**
 * Parses the text of /proc/<pid>/stat. The command name (field 2) is in parentheses and may hold spaces and
 * parentheses itself, so fields are counted from the last ")".
 */
export function parseProcStat(text: string): ProcStat {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) throw new Error(`not a /proc/<pid>/stat line: ${text.slice(0, 80)}`);
  // After ")": field 3 (state) is rest[0], so field f is rest[f - 3].
  const rest = text
    .slice(close + 2)
    .trim()
    .split(" ");
  const field = (f: number): number => {
    const value = Number(rest[f - 3]);
    if (!Number.isFinite(value)) throw new Error(`field ${f} missing in /proc/<pid>/stat: ${text.slice(0, 80)}`);
    return value;
  };
  return {
    pid: Number(text.slice(0, open).trim()),
    ppid: field(4),
    ownTicks: field(14) + field(15),
    reapedTicks: field(16) + field(17),
    startTicks: field(22),
  };
}

/** `root` and every live descendant among `processes`, root first; empty when `root` is not among them. */
export function treeMembers(processes: Iterable<ProcStat>, root: number): ProcStat[] {
  const byParent = new Map<number, ProcStat[]>();
  let rootStat: ProcStat | undefined;
  for (const p of processes) {
    if (p.pid === root) rootStat = p;
    const siblings = byParent.get(p.ppid);
    if (siblings) siblings.push(p);
    else byParent.set(p.ppid, [p]);
  }
  if (!rootStat) return [];
  const members: ProcStat[] = [];
  const seen = new Set<number>();
  const stack = [rootStat];
  for (let p = stack.pop(); p; p = stack.pop()) {
    if (seen.has(p.pid)) continue;
    seen.add(p.pid);
    members.push(p);
    stack.push(...(byParent.get(p.pid) ?? []));
  }
  return members;
}

/**
 * CPU ticks of `root` and every live descendant, plus what their exited children left in cutime/cstime: a backend
 * that exits moves its time from the live sum into its parent's reaped ticks, so the total only ever grows.
 * Undefined when `root` is not among `processes`.
 */
export function treeTicks(processes: Iterable<ProcStat>, root: number): number | undefined {
  const members = treeMembers(processes, root);
  return members.length === 0 ? undefined : ticksOf(members);
}

function ticksOf(members: ProcStat[]): number {
  return members.reduce((ticks, p) => ticks + p.ownTicks + p.reapedTicks, 0);
}

/** `voluntary_ctxt_switches` of a /proc/<pid>/task/<tid>/status text: the times the thread went to sleep. */
export function parseVoluntarySwitches(text: string): number | undefined {
  const match = /^voluntary_ctxt_switches:\s*(\d+)$/m.exec(text);
  return match ? Number(match[1]) : undefined;
}

/**
 * How many times the threads of process `pid` have gone to sleep so far (their voluntary context switches, summed;
 * the kernel counts them per thread). Each is followed by a wake-up, which on this kind of virtual machine costs more
 * CPU than most of the work it wakes up for (docs/benchmarks.md). Undefined when the process is gone.
 */
export function readSleeps(pid: number): number | undefined {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  let sleeps = 0;
  for (const tid of tids) {
    try {
      sleeps += parseVoluntarySwitches(readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8")) ?? 0;
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return sleeps;
}

/** Every process /proc lists now; null without /proc (macOS). Processes that exit while it reads are skipped. */
export function readProcesses(): ProcStat[] | null {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return null;
  }
  const out: ProcStat[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      out.push(parseProcStat(readFileSync(`/proc/${entry}/stat`, "utf8")));
    } catch {
      // Gone between the listing and the read.
    }
  }
  return out;
}

let ticksPerSecond: number | undefined;

/** The kernel's clock tick (getconf CLK_TCK), in which /proc counts CPU time; 100 where getconf is missing. */
export function clockTicksPerSecond(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** A process tree to sample: its root's id is read at each sample, as an instance may have been restarted. */
export interface CpuTarget {
  name: string;
  pid: () => number | undefined;
}

/** One live process's sleeps so far (its live threads'), and when it started (`ProcStat.startTicks`). */
export interface ProcessSleeps {
  startTicks: number;
  sleeps: number;
}

/**
 * CPU milliseconds so far of each target's tree (null: not running, or no /proc) and of this process; and the sleeps
 * so far of each live process of each tree, by pid, and of this process (every thread it ever had).
 */
export interface CpuSample {
  trees: Map<string, number | null>;
  selfMs: number;
  sleeps: Map<string, Map<number, ProcessSleeps> | null>;
  selfSleeps: number;
}

/** One instant's CPU time of `targets` and of this process (the load generator); read at window edges. */
export function sampleCpu(targets: CpuTarget[]): CpuSample {
  const processes = readProcesses();
  const msPerTick = 1000 / clockTicksPerSecond();
  const trees = new Map<string, number | null>();
  const sleeps = new Map<string, Map<number, ProcessSleeps> | null>();
  for (const t of targets) {
    const pid = t.pid();
    const members = processes && pid !== undefined ? treeMembers(processes, pid) : [];
    trees.set(t.name, members.length === 0 ? null : ticksOf(members) * msPerTick);
    const byPid = new Map<number, ProcessSleeps>();
    for (const p of members) {
      const n = readSleeps(p.pid);
      if (n !== undefined) byPid.set(p.pid, { startTicks: p.startTicks, sleeps: n });
    }
    sleeps.set(t.name, byPid.size === 0 ? null : byPid);
  }
  const { user, system } = process.cpuUsage();
  // getrusage counts the threads that ended too, which /proc's per-thread counts do not.
  return {
    trees,
    selfMs: (user + system) / 1000,
    sleeps,
    selfSleeps: process.resourceUsage().voluntaryContextSwitches,
  };
}

/**
 * The sleeps of one tree between two samples: each process's growth, one that started since (a new pid, or a reused
 * one with another start time) counted from zero. /proc counts sleeps per live thread, so a process or a thread that
 * ended in between takes its sleeps with it (a drop is counted as none): where they come and go within a window the
 * figure is a lower bound.
 */
export function sleepsBetween(
  before: Map<number, ProcessSleeps> | null,
  after: Map<number, ProcessSleeps> | null,
): number | null {
  if (before === null || after === null) return null;
  let sleeps = 0;
  for (const [pid, now] of after) {
    const earlier = before.get(pid);
    sleeps += earlier?.startTicks === now.startTicks ? Math.max(0, now.sleeps - earlier.sleeps) : now.sleeps;
  }
  return sleeps;
}

/** CPU spent by one process tree over a window. */
export interface ProcessCpu {
  name: string;
  /** Milliseconds, or null when it could not be read at both edges. */
  ms: number | null;
  msPerMessage: number | null;
  /** Times its threads went to sleep (and woke up again), or null when they could not be read at both edges. */
  sleeps: number | null;
  sleepsPerMessage: number | null;
}

export interface WindowCpu {
  processes: ProcessCpu[];
  /** Σ of `processes` (null when any is unknown): what serving the messages cost. */
  totalMs: number | null;
  totalMsPerMessage: number | null;
  /** This process: the load generator and its client sockets, not part of the total. */
  generatorMs: number;
  generatorMsPerMessage: number | null;
  /** The processes' sleeps added up, per delivered message (null when any is unknown). */
  totalSleepsPerMessage: number | null;
  generatorSleepsPerMessage: number | null;
}

/** The CPU each target spent between two samples, also per delivered message (null for none delivered). */
export function cpuBetween(before: CpuSample, after: CpuSample, names: string[], delivered: number): WindowCpu {
  const per = (ms: number | null) => (ms === null || delivered === 0 ? null : ms / delivered);
  const processes = names.map((name) => {
    const a = before.trees.get(name);
    const b = after.trees.get(name);
    const ms = a === undefined || a === null || b === undefined || b === null ? null : b - a;
    const sleeps = sleepsBetween(before.sleeps.get(name) ?? null, after.sleeps.get(name) ?? null);
    return { name, ms, msPerMessage: per(ms), sleeps, sleepsPerMessage: per(sleeps) };
  });
  const total = (of: (p: ProcessCpu) => number | null) =>
    processes.some((p) => of(p) === null) ? null : processes.reduce((sum, p) => sum + of(p)!, 0);
  const totalMs = total((p) => p.ms);
  const generatorMs = after.selfMs - before.selfMs;
  const generatorSleeps = after.selfSleeps - before.selfSleeps;
  return {
    processes,
    totalMs,
    totalMsPerMessage: per(totalMs),
    generatorMs,
    generatorMsPerMessage: per(generatorMs),
    totalSleepsPerMessage: per(total((p) => p.sleeps)),
    generatorSleepsPerMessage: per(generatorSleeps),
  };
}
