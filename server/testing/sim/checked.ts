import { expect } from "vitest";
import { roundSummary, runRound, type RoundOptions, type RoundReport, type SimEnvironment } from "./simulation.ts";

function clean(report: RoundReport): boolean {
  return (
    report.lostMessages === 0 &&
    report.lostReads === 0 &&
    report.lostStates === 0 &&
    report.driftedUsers === 0 &&
    report.clientViolations === 0 &&
    report.problems.length === 0
  );
}

/**
 * Runs a round; when it fails, replays shorter prefixes of the same seeded plan to find a shorter failing one, and
 * prints the seed and that plan (every operation with what became of it) so `TEST_SEED=<seed>` reproduces it.
 */
export async function runChecked(env: SimEnvironment, options: RoundOptions): Promise<RoundReport> {
  let report: RoundReport;
  try {
    report = await runRound(env, options);
  } catch (err) {
    // A round that throws (a check that could not read, a tab that never connected) says how to replay it too.
    console.error(`consistency round threw: replay with TEST_SEED=${options.seed}`);
    throw err;
  }
  if (clean(report)) return report;
  let smallest = report;
  for (let ops = Math.floor(options.ops / 2); ops >= 25; ops = Math.floor(ops / 2)) {
    // A shorter round that throws finds nothing shorter: the first run's report is still printed.
    const shorter = await runRound(env, { ...options, ops }).catch(() => null);
    if (!shorter || clean(shorter)) break;
    smallest = shorter;
  }
  console.error(
    [
      `consistency round failed: replay with TEST_SEED=${options.seed}`,
      `first run: ${roundSummary(report)}`,
      `shortest failing plan found (${smallest.ops} operations):`,
      ...smallest.plan,
      "problems:",
      ...smallest.problems.slice(0, 30),
    ].join("\n"),
  );
  return report;
}

/** Nothing lost (messages, reads, mutes, marks), no drift, no tab that ever showed what it must not, no problem. */
export function expectClean(r: RoundReport): void {
  // The seed on both sides: a failure's diff names it, so TEST_SEED can replay the round.
  expect({
    seed: r.seed,
    lostMessages: r.lostMessages,
    lostReads: r.lostReads,
    lostStates: r.lostStates,
    driftedUsers: r.driftedUsers,
    clientViolations: r.clientViolations,
    problems: r.problems.slice(0, 10),
  }).toEqual({
    seed: r.seed,
    lostMessages: 0,
    lostReads: 0,
    lostStates: 0,
    driftedUsers: 0,
    clientViolations: 0,
    problems: [],
  });
}
