/**
 * `npm run soak -- --minutes 10 [--seed N] [--fault-rate 0.03]`: the model-based consistency simulation
 * (server/testing/sim) in rounds, with faults injected, until the time is up. Starts its own PostgreSQL,
 * redis-server and Tally processes, all on free ports; prints what it did and what it found.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { migrate } from "../server/db/migrate.ts";
import { postgresOsUser, startEmbeddedPostgres } from "../server/dev/postgres.ts";
import { startRedisServer } from "../server/dev/redis.ts";
import { createSimEnvironment, runRound, type FaultKind } from "../server/testing/sim/simulation.ts";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    seed: { type: "string" },
    "fault-rate": { type: "string", default: "0.03" },
    "ops-per-round": { type: "string", default: "400" },
  },
});
const minutes = Number(values.minutes);
const faultRate = Number(values["fault-rate"]);
const opsPerRound = Number(values["ops-per-round"]);
if (!(minutes > 0) || !(faultRate >= 0 && faultRate < 1) || !(opsPerRound > 0)) {
  console.error("usage: npm run soak -- --minutes <n> [--seed <n>] [--fault-rate <0..1>] [--ops-per-round <n>]");
  process.exit(2);
}
const firstSeed = values.seed ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31) + 1;

const dir = await mkdtemp(path.join(os.tmpdir(), "tally-soak-"));
const owner = await postgresOsUser();
if (owner) await import("node:fs/promises").then((fs) => fs.chown(dir, owner.uid, owner.gid));
const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, "pg"), durable: false });
await migrate(pg.url);
const redisServer = await startRedisServer();
const env = await createSimEnvironment({ databaseUrl: pg.url, redisServer, instances: 2, withCrasher: true });

const totals = {
  rounds: 0,
  ops: 0,
  sends: 0,
  reads: 0,
  acknowledged: 0,
  lost: 0,
  lostReads: 0,
  drift: 0,
  violations: 0,
};
const faults: Record<FaultKind, number> = {
  flushall: 0,
  "redis-restart": 0,
  "kill-instance": 0,
  "crash-after-commit": 0,
};
const failures: string[] = [];
const deadline = Date.now() + minutes * 60_000;
console.log(
  `soak: ${minutes} min, first seed ${firstSeed}, fault rate ${faultRate}, ${opsPerRound} operations a round`,
);
try {
  for (let seed = firstSeed; Date.now() < deadline; seed++) {
    const r = await runRound(env, { seed, ops: opsPerRound, faultRate });
    totals.rounds++;
    totals.ops += r.ops;
    totals.sends += r.sends;
    totals.reads += r.reads;
    totals.acknowledged += r.acknowledgedMessages;
    totals.lost += r.lostMessages;
    totals.lostReads += r.lostReads;
    totals.drift += r.driftedUsers;
    totals.violations += r.clientViolations;
    for (const [k, v] of Object.entries(r.faults)) faults[k as FaultKind] += v;
    const ok = r.problems.length === 0;
    if (!ok) failures.push(`seed ${seed}: ${r.problems.slice(0, 5).join(" | ")}`);
    const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
    console.log(
      `round ${totals.rounds} seed ${seed}: ${r.ops} ops, faults ${JSON.stringify(r.faults)}, ` +
        `${ok ? "clean" : `PROBLEMS: ${r.problems.length}`} (${left}s left)`,
    );
  }
} finally {
  await env.close();
  await redisServer.stop();
  await pg.stop();
  await rm(dir, { recursive: true, force: true });
}

const faultCount = Object.values(faults).reduce((a, b) => a + b, 0);
console.log("\nsoak summary");
console.log(`  rounds:                   ${totals.rounds}`);
console.log(`  operations done:          ${totals.ops} (${totals.sends} sends, ${totals.reads} reads)`);
console.log(`  faults injected:          ${faultCount} ${JSON.stringify(faults)}`);
console.log(`  messages acknowledged:    ${totals.acknowledged}`);
console.log(`  messages lost:            ${totals.lost}`);
console.log(`  acknowledged reads lost:  ${totals.lostReads}`);
console.log(`  drift found (users):      ${totals.drift}`);
console.log(`  client total != sum:      ${totals.violations}`);
for (const f of failures) console.log(`  ${f}`);
process.exit(totals.lost + totals.lostReads + totals.drift + totals.violations + failures.length === 0 ? 0 : 1);
