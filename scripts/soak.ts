/**
 * `npm run soak -- --minutes 10 [--seed N] [--fault-rate 0.03] [--ops-per-round 400] [--rounds N] [--concurrency 6]
 * [--cluster]`: the model-based consistency simulation (server/testing/sim) in rounds, with faults injected, until
 * the time is up (or the rounds are done). Each round runs on a fresh database with its own seed (the first, then
 * one more each round); a failing round prints its plan and the command that replays it. Starts its own PostgreSQL,
 * redis-server and Tally processes, all on free ports; prints what it did and what it found. `--cluster` runs the
 * cluster round instead: a local Redis Cluster (3 masters + 3 replicas) and HAProxy in front of the instances, with
 * masters killed and slots resharded mid-traffic besides the other faults. Rounds of odd seeds list two conversations
 * a page, so tabs count conversations they do not list and page through the list.
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startRedisCluster } from "../server/embedded/redis-cluster.ts";
import { startThrowawayServices } from "../server/embedded/services.ts";
import {
  createSimEnvironment,
  noFaults,
  roundSummary as summary,
  runRound,
  type FaultKind,
  type RoundReport,
} from "../server/testing/sim/simulation.ts";

const usage =
  "usage: npm run soak -- [--minutes <n>] [--seed <n>] [--fault-rate <0..1>] [--ops-per-round <n>] " +
  "[--rounds <n>] [--concurrency <n>] [--cluster]";
const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    seed: { type: "string" },
    "fault-rate": { type: "string", default: "0.03" },
    "ops-per-round": { type: "string", default: "400" },
    rounds: { type: "string" },
    concurrency: { type: "string", default: "6" },
    cluster: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const minutes = Number(values.minutes);
const faultRate = Number(values["fault-rate"]);
const opsPerRound = Number(values["ops-per-round"]);
const rounds = values.rounds === undefined ? Infinity : Number(values.rounds);
const concurrency = Number(values.concurrency);
const firstSeed = values.seed ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31) + 1;
if (
  !(minutes > 0) ||
  !(faultRate >= 0 && faultRate < 1) ||
  !(opsPerRound > 0) ||
  !(rounds > 0) ||
  !(Number.isInteger(concurrency) && concurrency > 0) ||
  !(Number.isInteger(firstSeed) && firstSeed > 0)
) {
  console.error(usage);
  process.exit(2);
}

const services = await startThrowawayServices({ name: "soak" });
const cluster = values.cluster
  ? await startRedisCluster({ dir: join(services.tmpDir, "cluster"), nodeTimeoutMs: 1000 })
  : undefined;
const env = await createSimEnvironment({
  adminUrl: services.postgres.adminUrl,
  ...(cluster ? { cluster, balancer: true } : { redisServer: services.redis }),
  instances: 2,
  withCrasher: true,
});

const totals = {
  rounds: 0,
  ops: 0,
  sends: 0,
  mentionSends: 0,
  reads: 0,
  mutes: 0,
  marks: 0,
  leaves: 0,
  adds: 0,
  removals: 0,
  unsends: 0,
  deletes: 0,
  acknowledged: 0,
  lost: 0,
  lostReads: 0,
  lostStates: 0,
  drift: 0,
  violations: 0,
};
const faults = noFaults();
const faultErrors: string[] = [];
const failures: string[] = [];
const replay = (seed: number) =>
  `npm run soak -- --seed ${seed} --rounds 1 --ops-per-round ${opsPerRound} --fault-rate ${faultRate}` +
  ` --concurrency ${concurrency}${cluster ? " --cluster" : ""}`;
// A round that throws fails like one with problems, and the soak goes on; a second in a row stops it (then it is the
// environment that is broken, and every round would fail the same way).
let threw = false;
// One still running after ten minutes has hung, and the soak stops to report it.
const HANG_MS = 10 * 60_000;
const deadline = Date.now() + minutes * 60_000;
console.log(
  `soak${cluster ? " (Redis Cluster, HAProxy)" : ""}: ${minutes} min, first seed ${firstSeed}, fault rate ${faultRate}, ${opsPerRound} operations a round, ` +
    `${concurrency} at once`,
);
try {
  for (let seed = firstSeed; Date.now() < deadline && totals.rounds < rounds; seed++) {
    let r: RoundReport;
    const round = runRound(env, {
      seed,
      ops: opsPerRound,
      faultRate,
      concurrency,
      // Rounds of odd seeds list two conversations a page (tabs scroll for the rest), the others the page's own.
      ...(seed % 2 === 1 ? { listPage: 2 } : {}),
      // A round takes well under a minute; one still running after two says where it is, every two minutes.
      stallMs: 120_000,
      onStall: (report) => console.error(`  slow round: ${report}`),
    });
    let hangTimer: NodeJS.Timeout | undefined;
    const hung = new Promise<"hung">((resolve) => (hangTimer = setTimeout(() => resolve("hung"), HANG_MS)));
    try {
      const outcome = await Promise.race([round, hung]);
      if (outcome === "hung") {
        // It cannot be stopped from here (its tabs keep retrying): the soak ends, with what it found so far.
        round.catch(() => undefined);
        totals.rounds++;
        console.log(`round ${totals.rounds} seed ${seed}: FAILED, still running after ${HANG_MS / 60_000} min`);
        failures.push(`seed ${seed}: hung (the slow-round reports above say where)\n    replay: ${replay(seed)}`);
        break;
      }
      r = outcome;
    } catch (err) {
      totals.rounds++;
      const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
      console.log(`round ${totals.rounds} seed ${seed}: FAILED, the round threw (${left}s left)`);
      console.log(`  error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      failures.push(`seed ${seed}: the round threw: ${String(err)}\n    replay: ${replay(seed)}`);
      if (threw) break;
      threw = true;
      continue;
    } finally {
      clearTimeout(hangTimer);
    }
    threw = false;
    totals.rounds++;
    totals.ops += r.ops;
    totals.sends += r.sends;
    totals.mentionSends += r.mentionSends;
    totals.reads += r.reads;
    totals.mutes += r.mutes;
    totals.marks += r.marks;
    totals.leaves += r.leaves;
    totals.adds += r.adds;
    totals.removals += r.removals;
    totals.unsends += r.unsends;
    totals.deletes += r.deletes;
    totals.acknowledged += r.acknowledgedMessages;
    totals.lost += r.lostMessages;
    totals.lostReads += r.lostReads;
    totals.lostStates += r.lostStates;
    totals.drift += r.driftedUsers;
    totals.violations += r.clientViolations;
    for (const [k, v] of Object.entries(r.faults)) faults[k as FaultKind] += v;
    faultErrors.push(...r.faultErrors.map((e) => `seed ${seed}: ${e}`));
    for (const e of r.faultErrors) console.log(`  a fault could not be injected: ${e}`);
    const ok = r.problems.length === 0;
    const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
    console.log(
      `round ${totals.rounds} seed ${seed}: ${r.ops} ops (${r.sends} sends, ${r.mentionSends} mentioning, ` +
        `${r.mutes} mutes, ${r.marks} marks, ${r.pages} pages of older conversations), faults ${JSON.stringify(r.faults)}, ${summary(r)}, ` +
        `${ok ? "clean" : `PROBLEMS: ${r.problems.length}`} (${left}s left)`,
    );
    if (!ok) {
      failures.push(`seed ${seed}: ${r.problems.slice(0, 5).join(" | ")}\n    replay: ${replay(seed)}`);
      console.log(
        ["  plan:", ...r.plan.map((l) => `    ${l}`), "  problems:", ...r.problems.map((p) => `    ${p}`)].join("\n"),
      );
    }
  }
} finally {
  await env.close();
  await cluster?.stop();
  await services.stop();
}

const faultCount = Object.values(faults).reduce((a, b) => a + b, 0);
console.log("\nsoak summary");
console.log(`  rounds:                   ${totals.rounds}`);
console.log(
  `  operations done:          ${totals.ops} (${totals.sends} sends of which ${totals.mentionSends} mentioning, ` +
    `${totals.reads} reads, ${totals.mutes} mutes/unmutes and ${totals.marks} marks acknowledged, ` +
    `${totals.adds} people added to groups, ${totals.removals} removed from them, ${totals.leaves} leaves, ` +
    `${totals.unsends} messages deleted by their senders, ${totals.deletes} conversations deleted)`,
);
console.log(`  faults injected:          ${faultCount} ${JSON.stringify(faults)}`);
console.log(`  faults not injected:      ${faultErrors.length}${faultErrors.map((e) => `\n    ${e}`).join("")}`);
console.log(`  messages acknowledged:    ${totals.acknowledged}`);
console.log(`  messages lost:            ${totals.lost}`);
console.log(`  acknowledged reads lost:  ${totals.lostReads}`);
console.log(`  mutes or marks lost:      ${totals.lostStates}`);
console.log(`  drift found (users):      ${totals.drift}`);
console.log(`  client violations:        ${totals.violations}`);
for (const f of failures) console.log(`  ${f}`);
process.exit(
  totals.lost + totals.lostReads + totals.lostStates + totals.drift + totals.violations + failures.length === 0 ? 0 : 1,
);
