import type { LabFaults, LabRunEnd, LabStrategyName, LabStrategyResult, LabWorkload } from "@/server/contracts";
import { DEFAULT_WORKLOAD, MAX_ATTEMPTS, STORY_LOCK_TTL_MS } from "@/server/contracts/lab-defaults";
import { STRATEGY_SHORT_LABELS } from "./colors";
import type { RunStatus } from "./store";

/** One word of the lab's jargon and what it means, in a sentence a presenter can read out. */
export interface GlossaryEntry {
  term: string;
  meaning: string;
}

/** Every term the form, the charts and the story use, for the "What do these words mean?" glossary. */
export const GLOSSARY: readonly GlossaryEntry[] = [
  {
    term: "badge",
    meaning: "A user's total unread count, the number on the app icon. It should equal the sum of their list.",
  },
  { term: "list", meaning: "The unread count of each of the user's conversations, as the conversation list shows." },
  { term: "drift", meaning: "A badge that disagrees with the sum of its conversations: the app contradicts itself." },
  {
    term: "truth",
    meaning:
      "What really happened: for each conversation, the newest message minus the read cursor, as the database knows it.",
  },
  {
    term: "naive (two writes)",
    meaning: "Adds 1 to the conversation, then (a separate command) 1 to the total. Nothing protects the gap.",
  },
  {
    term: "lock (SET NX PX)",
    meaning:
      `The same two writes while holding a per-user lock: SET key NX (only if it does Not eXist) PX ${DEFAULT_WORKLOAD.lock.ttlMs} ` +
      `(expires after ${DEFAULT_WORKLOAD.lock.ttlMs} ms in a run, ${STORY_LOCK_TTL_MS} ms in the stories, so a dead holder frees it). ` +
      "Others wait their turn.",
  },
  {
    term: "WATCH / MULTI",
    meaning:
      "An optimistic transaction: WATCH the keys, read, then MULTI…EXEC both writes at once. If another worker " +
      "changed a watched key, EXEC does nothing and the operation starts over (a retry).",
  },
  {
    term: "Lua (production)",
    meaning: "Tally's own script: one atomic call per event that updates max-registers and derives the counts.",
  },
  {
    term: "max-register",
    meaning:
      "A value that only ever grows (it keeps the highest it was told): the newest message seen and the newest " +
      "read. Unread = seen − read, so a repeated or late event changes nothing.",
  },
  {
    term: "hot user",
    meaning:
      "User 1, who gets the given share of all operations, like a busy group member: many updates to one " +
      "user's counters at the same time.",
  },
  { term: "worker", meaning: "One concurrent client with its own Redis connection; more workers, more races." },
  { term: "operation", meaning: "One event for one user: a message arrived (send) or a conversation was read." },
  {
    term: "redelivery",
    meaning: `A failed operation is tried again (up to ${MAX_ATTEMPTS} attempts), as Tally's outbox does after a failure.`,
  },
  { term: "seed", meaning: "The same seed replays the same operations and the same faults." },
  {
    term: "story mode",
    meaning: "One classic interleaving replayed on a real Redis, step by step, for each strategy.",
  },
];

/** One column of the results table: its heading and what it counts. */
export interface ResultColumn {
  heading: string;
  meaning: string;
}

export const RESULT_COLUMNS: readonly ResultColumn[] = [
  { heading: "ops/s", meaning: "operations finished per second" },
  { heading: "p50 / p99 ms", meaning: "time per operation for half / 99% of them, waits and retries included" },
  { heading: "retries", meaning: "WATCH transactions that found a watched key changed and started over" },
  { heading: "lock waits", meaning: "tries that found the user's lock taken and had to wait" },
  {
    heading: "aborted",
    meaning: "attempts that failed (an injected fault, a limit reached, Redis away); each is redelivered",
  },
  { heading: "lost", meaning: `operations that failed all ${MAX_ATTEMPTS} attempts` },
  {
    heading: "drift at the end (users / Σ)",
    meaning:
      "once no operation was in flight (every one finished, or for a stopped run those under way): users whose " +
      "badge ≠ the sum of their conversations / Σ, the sum of those " +
      "differences (the drift chart samples live, with operations in flight)",
  },
  {
    heading: "≠ truth (counts / totals)",
    meaning: "conversation counts / badges that differ from the truth, even where they add up",
  },
];

/**
 * A latency as the results table shows it: three significant figures at most, whole milliseconds from 100 ms up
 * (441.381 → 441, 70.643 → 70.6, 2.456 → 2.46, 0.3125 → 0.31); the server's three decimals are noise on a screen.
 */
export function formatMs(ms: number): string {
  if (ms >= 100) return String(Math.round(ms));
  if (ms >= 10) return String(Math.round(ms * 10) / 10);
  return String(Math.round(ms * 100) / 100);
}

/** The heading's meaning, for a column's tooltip. */
export function columnMeaning(heading: string): string {
  return RESULT_COLUMNS.find((c) => c.heading === heading)?.meaning ?? "";
}

export type FaultPresetId = "none" | "crash" | "slow" | "restart" | "everything";

export interface FaultPreset {
  id: FaultPresetId;
  label: string;
  /** What the preset does to the run, for its tooltip. */
  description: string;
  faults: LabFaults;
}

const NO_FAULTS: LabFaults = { ...DEFAULT_WORKLOAD.faults, stepFailureRate: 0, stepDelayMs: 0, workerDeathRate: 0 };
const CRASH = { stepFailureRate: 0.03, workerDeathRate: 0.002 };
const SLOW = { stepDelayMs: 5, stepDelayRate: 0.2 };

export const FAULT_PRESETS: readonly FaultPreset[] = [
  { id: "none", label: "No faults", description: "Concurrency alone: every step succeeds.", faults: NO_FAULTS },
  {
    id: "crash",
    label: "Crash between the writes",
    description: "3% of operations fail after their first write; 0.2% of workers die there, holding the lock.",
    faults: { ...NO_FAULTS, ...CRASH },
  },
  {
    id: "slow",
    label: "Slow server",
    description: "A 5 ms pause between the two steps of 20% of the operations: a wider window for races.",
    faults: { ...NO_FAULTS, ...SLOW },
  },
  {
    id: "restart",
    label: "Redis restart",
    description: "Redis restarts empty halfway through each strategy.",
    faults: { ...NO_FAULTS, redisRestart: true },
  },
  {
    id: "everything",
    label: "Everything",
    description: "Crashes, slow steps and a Redis restart at once.",
    faults: { ...NO_FAULTS, ...CRASH, ...SLOW, redisRestart: true },
  },
];

/** The preset the fault fields match now, if any. */
export function matchingPreset(faults: LabFaults): FaultPresetId | null {
  const same = (a: LabFaults, b: LabFaults) =>
    a.stepFailureRate === b.stepFailureRate &&
    a.workerDeathRate === b.workerDeathRate &&
    a.redisRestart === b.redisRestart &&
    // A delay rate without a delay changes nothing.
    a.stepDelayMs === b.stepDelayMs &&
    (a.stepDelayMs === 0 || a.stepDelayRate === b.stepDelayRate);
  return FAULT_PRESETS.find((p) => same(p.faults, faults))?.id ?? null;
}

const NAMES: Record<LabStrategyName, string> = { naive: "naive", lock: "lock", watch: "WATCH", lua: "Lua" };

function list(items: string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A stopped run's strategies that never started, as a sentence ("lock, WATCH and Lua did not run."), or null. */
export function notRun(asked: readonly LabStrategyName[], results: readonly LabStrategyResult[]): string | null {
  const missing = asked.filter((strategy) => !results.some((r) => r.strategy === strategy));
  if (missing.length === 0) return null;
  return `${capital(list(missing.map((strategy) => NAMES[strategy])))} did not run.`;
}

/**
 * What a finished run shows, in plain words: who drifted and by how much, who kept every badge equal to its
 * list, and why a strategy whose badges add up can still be wrong. Counter strategies (lock, WATCH) apply a
 * user's sends and reads in whatever order the concurrent workers and redeliveries reach Redis, and a counter
 * cannot tell a late event from a new one: a read that lands after a send it never saw clears that message
 * too, a send that lands after its read counts again. Their badge still equals the sum (no drift), but both are
 * off. Lua's max-registers give the same state in any order.
 */
export function summarize(results: readonly LabStrategyResult[], faults: Pick<LabFaults, "redisRestart">): string {
  if (results.length === 0) return "No strategy finished.";
  const drifted = results.filter((r) => r.drift.users > 0);
  const kept = results.filter((r) => r.drift.users === 0);
  const offTruth = kept.filter((r) => r.wrong.counts + r.wrong.totals > 0);
  const exact = kept.filter((r) => r.wrong.counts + r.wrong.totals === 0);
  const sentences: string[] = [];

  const clauses: string[] = [];
  if (drifted.length > 0) {
    const each = drifted.map(
      (r) =>
        `${NAMES[r.strategy]} drifted on ${plural(r.drift.users, "user")} (badges off by ${r.drift.amount} in all)`,
    );
    clauses.push(list(each));
  }
  if (kept.length > 0) {
    const who = list(kept.map((r) => NAMES[r.strategy]));
    clauses.push(`${who} kept every badge equal to the sum of its conversations`);
  }
  sentences.push(`${capital(clauses.join("; "))}.`);

  if (offTruth.length > 0) {
    const one = offTruth.length === 1;
    const detail = offTruth
      .map(
        (r) =>
          `${one ? "" : `${NAMES[r.strategy]} `}${plural(r.wrong.counts, "count")}, ${plural(r.wrong.totals, "badge")}`,
      )
      .join("; ");
    const restart =
      faults.redisRestart && offTruth.some((r) => r.strategy !== "lua")
        ? " Counters also have nothing to rebuild from after the Redis restart, so they start again from zero."
        : "";
    sentences.push(
      `${capital(list(offTruth.map((r) => NAMES[r.strategy])))} still ${one ? "shows" : "show"} ≠ truth (${detail}) ` +
        `with zero drift: ${one ? "its" : "their"} badges add up, but workers and redeliveries apply a user's ` +
        "sends and reads out of order and a counter can't tell, so a read that lands after a send it never saw " +
        `clears that message too.${restart}`,
    );
  }
  const lost = results.filter((r) => r.lost > 0);
  if (lost.length > 0) {
    const each = lost.map((r) => `${NAMES[r.strategy]} lost ${plural(r.lost, "operation")}`);
    sentences.push(`${capital(list(each))} after ${MAX_ATTEMPTS} attempts each.`);
  }
  if (exact.length > 0 && (drifted.length > 0 || offTruth.length > 0)) {
    const who = list(exact.map((r) => NAMES[r.strategy]));
    const why = exact.every((r) => r.strategy === "lua")
      ? ": its max-registers end in the same state whatever the order"
      : "";
    sentences.push(`${who} also matched the truth everywhere${why}.`);
  }
  return sentences.join(" ");
}

/**
 * The run's state beside the Run button. A run that ended early says so, and who stopped it when it was not this
 * page (another tab, or the server's time limit); a Stop asked and not yet answered says "stopping…".
 */
export function runStatusText(status: RunStatus, end: LabRunEnd | undefined, stopAsked: boolean): string {
  if (status === "idle") return "";
  if (status === "running" && stopAsked) return "stopping…";
  if (status !== "stopped" || !end || end.reason === "completed") return status;
  if (end.reason === "timeLimit") return `stopped at the ${end.limitMinutes}-minute limit`;
  return stopAsked ? "stopped" : `stopped by ${end.by}`;
}

/** A glossary term's meaning, for a tooltip; "" for a term the glossary lacks. */
export function glossaryMeaning(term: string): string {
  return GLOSSARY.find((g) => g.term === term)?.meaning ?? "";
}

const percent = (share: number) => `${Math.round(share * 1000) / 10}%`;

/**
 * A run's settings in one sentence, for a page that watches someone else's run: its own form shows its own
 * settings, not the ones the charts draw.
 */
export function describeRunSettings(strategies: readonly LabStrategyName[], workload: LabWorkload): string {
  const { faults } = workload;
  const list = [
    faults.stepFailureRate > 0 && `the second step fails on ${percent(faults.stepFailureRate)}`,
    faults.stepDelayMs > 0 &&
      faults.stepDelayRate > 0 &&
      `${faults.stepDelayMs} ms between the steps on ${percent(faults.stepDelayRate)}`,
    faults.workerDeathRate > 0 && `workers die holding the lock on ${percent(faults.workerDeathRate)}`,
    faults.redisRestart && "Redis restarts halfway",
  ].filter((f): f is string => typeof f === "string");
  const names = strategies.map((n) => STRATEGY_SHORT_LABELS[n]).join(", ");
  return (
    `${workload.operations} operations per strategy (${names}) over ${workload.users} users, ` +
    `${workload.workers} workers; faults: ${list.length > 0 ? list.join(", ") : "none"}.`
  );
}
