/**
 * `npm run bench`: the lab's strategy comparison, the Lua ceiling, a user in 5000 conversations and one mentioned
 * 100 000 times (big-user), end-to-end latency and CPU per message across two instances (Tally's; a bare Socket.IO
 * relay's as the floor; the same relay storing each message before its push, the floor + commit), group fan-out,
 * sync abuse and where a send's PostgreSQL time goes (statements), on throw-away services of its own. Prints tables;
 * `--json <path>` also writes the numbers. `--quick` runs a smaller version (a couple of minutes) for trying things
 * out; `--only e2e,fanout` runs some parts. docs/benchmarks.md explains it all.
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import type { LabStrategyName, LabStrategyResult, LabWorkload } from "../contracts/lab.ts";
import { createDb } from "../db/prisma.ts";
import { loadEnv } from "../env.ts";
import { createRedis } from "../redis/client.ts";
import { createUnreadService } from "../unread/unread.service.ts";
import { measureBigUser, measureMentionFlood, type BigUserResult } from "./bench/big-user.ts";
import { measureCluster } from "./bench/cluster.ts";
import { measureCeiling, type CeilingResult } from "./bench/ceiling.ts";
import { measureConnections } from "./bench/connections.ts";
import { measureDiskFlush } from "./bench/disk.ts";
import type { CpuTarget } from "./bench/cpu.ts";
import { openFloorTransport } from "./bench/floor.ts";
import { LOAD_MODES } from "./bench/load.ts";
import { endToEndReport, table } from "./bench/report.ts";
import { measureStatements, statementsTable } from "./bench/statements.ts";
import { measureEndToEnd, measureFanout, openTallyTransport, type FanoutResult } from "./bench/send-to-badge.ts";
import { readSendMetrics } from "./bench/stages.ts";
import { startBenchServices, startFloor, startInstance, type Instance } from "./bench/services.ts";
import { measureSyncAbuse } from "./bench/sync-abuse.ts";
import { openLabRedis } from "./lab-redis.ts";
import { describeRun, newRunId, runLab } from "./lab.ts";
import { round } from "./measure.ts";
import { resolveWorkload, STRATEGIES } from "./params.ts";

loadEnv();
/** Every part `--only` may name; without it, all but `connections` run. */
const PARTS = [
  "strategies",
  "ceiling",
  "big-user",
  "cluster",
  "e2e",
  "fanout",
  "sync-abuse",
  "statements",
  "connections",
];
const usage =
  "usage: npm run bench -- [--quick] [--only <parts>] [--rates <n,n,…>] [--seconds <s>] [--sockets <n>] [--json <path>]\n" +
  `  parts, comma-separated: ${PARTS.join(", ")} (connections runs only when named)\n` +
  "  docs/benchmarks.md explains each part and its figures";
/** A wrong argument: what is wrong and the usage, on stderr, and exit code 2 (no stack trace). */
function usageError(message: string): never {
  console.error(`${message}\n${usage}`);
  process.exit(2);
}
const { values: args } = (() => {
  try {
    return parseArgs({
      options: {
        help: { type: "boolean", default: false },
        json: { type: "string" },
        quick: { type: "boolean", default: false },
        only: { type: "string" },
        sockets: { type: "string", default: "10000" },
        rates: { type: "string" },
        seconds: { type: "string" },
      },
    });
  } catch (err) {
    return usageError((err as Error).message);
  }
})();
if (args.help) {
  console.log(usage);
  process.exit(0);
}
const quick = args.quick ?? false;
/** `--rates 2000,3000`: the end-to-end part's offered rates (messages/s), instead of the default ladder. */
const e2eRates = args.rates?.split(",").map((r) => {
  const n = Number(r);
  if (!Number.isInteger(n) || n <= 0) usageError(`--rates takes whole numbers of messages per second, not '${r}'`);
  return n;
});
/** `--seconds 8`: how long the end-to-end part offers each rate (longer windows, steadier figures). */
const e2eSeconds = args.seconds === undefined ? undefined : Number(args.seconds);
if (e2eSeconds !== undefined && !(e2eSeconds > 0 && e2eSeconds <= 600)) {
  usageError(`--seconds takes a number of seconds (0 < s <= 600), not '${args.seconds}'`);
}
/** `--sockets 10000`: the connections part's sockets. */
const wanted = Number(args.sockets);
if (!Number.isInteger(wanted) || wanted < 2) usageError(`--sockets takes a whole number ≥ 2, not '${args.sockets}'`);
const only = new Set(args.only?.split(",") ?? PARTS.filter((part) => part !== "connections"));
const unknownParts = [...only].filter((part) => !PARTS.includes(part));
if (unknownParts.length > 0) usageError(`--only: no part named ${unknownParts.map((p) => `'${p}'`).join(", ")}`);

interface Scenario {
  name: string;
  workload: LabWorkload;
}

const scenarios: Scenario[] = [
  { name: "hot user", workload: resolveWorkload({ operations: quick ? 4000 : 20_000 }) },
  {
    name: "hot user + step failure 2%",
    workload: resolveWorkload({ operations: quick ? 2000 : 5000, faults: { stepFailureRate: 0.02 } }),
  },
  {
    name: "hot user + 5 ms delay on 20%",
    workload: resolveWorkload({ operations: quick ? 2000 : 5000, faults: { stepDelayMs: 5, stepDelayRate: 0.2 } }),
  },
];

const log = (line: string) => process.stderr.write(`${line}\n`);

/** The issue's target for the end-to-end part: CPU per delivered message (instances + PostgreSQL + Redis). */
const E2E_CPU_TARGET = { cpuTargetMs: 1.0, cpuTargetRate: 1000 };

/** A ratio as a percentage against the 50% both ceiling ratios aim at. */
const percent = (ratio: number | null) => (ratio === null ? "n/a" : `${Math.round(ratio * 100)}% (target ≥ 50%)`);

async function strategies(): Promise<{ scenario: string; workload: LabWorkload; results: LabStrategyResult[] }[]> {
  const out = [];
  const labRedis = await openLabRedis();
  try {
    for (const s of scenarios) {
      log(`strategies: ${s.name} (${s.workload.operations} operations each)…`);
      const run = describeRun(newRunId(), [...STRATEGIES] as LabStrategyName[], s.workload, labRedis);
      const { results } = await runLab({ run, labRedis });
      for (const r of results) log(`  ${r.strategy}: ${r.opsPerSec} ops/s, drift ${r.drift.users}`);
      out.push({ scenario: s.name, workload: s.workload, results });
    }
  } finally {
    await labRedis.close();
  }
  return out;
}

async function main(): Promise<void> {
  const began = Date.now();
  const report: Record<string, unknown> = {
    machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() },
    quick,
  };
  const out: string[] = [];

  if (only.has("strategies")) {
    const runs = await strategies();
    report.strategies = runs;
    const first = runs[0]!;
    const w = first.workload;
    out.push(
      `## Strategies: ${w.users} users × ${w.conversationsPerUser} conversations, ${Math.round(w.hotUserShare * 100)}% of operations on one user, ` +
        `${w.workers} workers, ${Math.round(w.sendShare * 100)}% sends, seed ${w.seed}`,
      "",
      table(
        [
          "workload",
          "strategy",
          "ops",
          "ops/s",
          "p50 ms",
          "p99 ms",
          "retries",
          "lock waits",
          "aborted",
          "lost",
          "drift users",
          "drift Σ",
          "wrong counts",
          "wrong totals",
        ],
        runs.flatMap((run) =>
          run.results.map((r) => [
            run.scenario,
            r.strategy,
            r.completed,
            r.opsPerSec,
            r.p50Ms,
            r.p99Ms,
            r.retries,
            r.lockWaits,
            r.aborted,
            r.lost,
            r.drift.users,
            r.drift.amount,
            r.wrong.counts,
            r.wrong.totals,
          ]),
        ),
      ),
    );
    const hot = Object.fromEntries(first.results.map((r) => [r.strategy, r]));
    const ratio = (a?: LabStrategyResult, b?: LabStrategyResult) =>
      a && b ? Math.round((a.opsPerSec / b.opsPerSec) * 10) / 10 : 0;
    const vsLock = ratio(hot.lua, hot.lock);
    const vsWatch = ratio(hot.lua, hot.watch);
    const naiveDrifts = runs
      .slice(1)
      .every((run) => (run.results.find((r) => r.strategy === "naive")?.drift.users ?? 0) > 0);
    const luaClean = runs.every((run) => run.results.find((r) => r.strategy === "lua")?.drift.users === 0);
    report.targets = {
      luaVsLock: vsLock,
      luaVsWatch: vsWatch,
      naiveDriftsUnderFaults: naiveDrifts,
      luaZeroDrift: luaClean,
    };
    out.push(
      "",
      `Lua vs lock: ${vsLock}× (target ≥ 3×) ${vsLock >= 3 ? "met" : "MISSED"}; Lua vs WATCH: ${vsWatch}× (target ≥ 2×) ${vsWatch >= 2 ? "met" : "MISSED"}; ` +
        `Lua drift 0 in every run: ${luaClean ? "yes" : "NO"}; naive drifts with each fault: ${naiveDrifts ? "yes" : "NO"}`,
      "",
    );
  }

  if (only.has("statements")) {
    const sends = quick ? 1000 : 3000;
    log("statements: where a send's PostgreSQL time goes (pg_stat_statements, a PostgreSQL of its own)…");
    // Each send 2 ms after the one before had its answer (a period of about 2.5 ms): about each instance's pace in the
    // end-to-end part at 1000/s. This PostgreSQL has pg_stat_statements loaded, which the end-to-end one has not.
    const statements = await measureStatements({ conversations: 20, sends, concurrency: 8, paced: { gapMs: 2 } });
    report.statements = statements;
    const { headers, rows } = statementsTable(statements);
    out.push(
      `## PostgreSQL: where a send's time goes (tally_store_messages, ${sends} sends a column, 20 direct conversations, durable)`,
      "",
      table(headers, rows),
      "",
      "Execution time per send from pg_stat_statements (track = all), which times a statement's ExecutorRun and ExecutorFinish only: each statement's executor setup and teardown, and PL/pgSQL's own work, fall in the call's time and in no statement's. A foreign key check runs inside the insert that fires it. The CPU row is every PostgreSQL process' CPU time from /proc: the execution, and the protocol, the commit with its WAL flush and the kernel's share.",
      "",
    );
    const lone = statements.loneCommit;
    if (lone)
      out.push(
        `A lone send's commit, each send ${lone.gapMs} ms after the one before had its answer, nothing else running (the message service's call to its answer, ${lone.sends} sends): ` +
          `p50 ${lone.p50Ms.toFixed(2)} ms, p99 ${lone.p99Ms.toFixed(2)} ms: what a durable commit adds to a send's way end to end, ` +
          "which the floor's has not (docs/benchmarks.md, a ninth look).",
        "",
      );
    // The disk alone, with the same pacing: a commit can be no steadier than the flush it waits for.
    const disk = await measureDiskFlush({ seconds: quick ? 3 : 10, gapMs: 2 });
    report.disk = disk;
    out.push(
      `The disk's own flush (8 kB written and fdatasync'd, ${disk.gapMs} ms after the one before, in the bench's temp directory, ${disk.flushes} flushes, no database): ` +
        `p50 ${disk.p50Ms.toFixed(2)} ms, p99 ${disk.p99Ms.toFixed(2)} ms, p99.9 ${disk.p999Ms.toFixed(1)} ms, max ${disk.maxMs.toFixed(1)} ms; ` +
        `${disk.over50Ms} over 50 ms, ${disk.over100Ms} over 100 ms. Every durable commit waits for one: a slow flush stalls every send of its group ` +
        "and those queued behind it, which the end-to-end part's commit stage shows as its p99 (docs/benchmarks.md, a fifteenth look).",
      "",
    );
  }

  const needServices = ["ceiling", "big-user", "cluster", "e2e", "fanout", "sync-abuse", "connections"].some((part) =>
    only.has(part),
  );
  if (needServices) {
    log("starting PostgreSQL and redis-server for the ceiling, big-user, end-to-end and fan-out measurements…");
    const services = await startBenchServices();
    const db = createDb(services.databaseUrl);
    const redis = createRedis(services.redisUrl);
    const instances: Instance[] = [];
    try {
      if (only.has("ceiling")) {
        log("ceiling: redis-benchmark and Tally's pipelined apply.lua…");
        const ceiling: CeilingResult = await measureCeiling({
          redis,
          db,
          host: "127.0.0.1",
          port: services.redisPort,
          requests: quick ? 100_000 : 300_000,
        });
        report.ceiling = ceiling;
        out.push(
          `## Ceiling: apply.lua, ${ceiling.clients} clients × pipeline ${ceiling.pipeline}, ${ceiling.requests} calls, one user, conversations and seqs in 0…${ceiling.keyspace - 1}`,
          "",
          table(
            ["path", "calls/s"],
            [
              ["redis-benchmark EVALSHA (raw)", ceiling.redisBenchmarkPerSec ?? "n/a"],
              ["Tally unread.applyMany (ioredis, one connection)", ceiling.tallyPerSec],
              ["ratio", percent(ceiling.ratio)],
              [
                `redis-benchmark EVALSHA apply.lua, best of ${ceiling.rounds} alternated with ↓`,
                ceiling.applyBestPerSec ?? "n/a",
              ],
              [
                `redis-benchmark EVALSHA of a trivial script (two HINCRBYs, one hash tag), best of ${ceiling.rounds}`,
                ceiling.trivialPerSec ?? "n/a",
              ],
              ["apply.lua raw / trivial raw", percent(ceiling.applyVsTrivial)],
            ],
          ),
          ...(ceiling.note ? ["", `Note: ${ceiling.note}`] : []),
          "",
        );
      }
      if (only.has("big-user")) {
        const conversations = 5000;
        log(`big user: one user in ${conversations} conversations, apply.lua, snapshots and syncs timed…`);
        const big: BigUserResult = await measureBigUser({
          redis,
          db,
          conversations,
          applies: quick ? 2000 : 5000,
          snapshots: 50,
          syncs: quick ? 5 : 100,
          burst: 32,
        });
        report.bigUser = big;
        const { apply, snapshot, sync, answer, paged, burst } = big;
        const wholeP50Ms = round(sync.p50Ms + answer.p50Ms);
        const pagedP50Ms = round(paged.p50Ms + paged.json.p50Ms);
        const times = (name: string, t: typeof apply) => [
          name,
          t.calls,
          t.serverP50Us,
          t.serverP99Us,
          t.serverMaxUs,
          t.usecPerCall,
          t.roundTripP50Ms,
          t.roundTripP99Ms,
        ];
        out.push(
          `## Big user: one user in ${big.conversations} conversations (${big.listed} with anything to show), rebuilt from PostgreSQL in ${big.rebuildMs} ms`,
          "",
          table(
            [
              "call",
              "calls",
              "server p50 µs",
              "server p99 µs",
              "server max µs",
              "usec_per_call",
              "round trip p50 ms",
              "round trip p99 ms",
            ],
            [times("apply.lua (one at a time)", apply), times("snapshot (a sync's Redis call: one MULTI)", snapshot)],
          ),
          "",
          `Server time is Redis' own: what each call added to INFO commandstats' usec of EVALSHA and EXEC (usec_per_call: their mean). A whole sync in process (the snapshot, then the list and last messages from PostgreSQL), ${sync.calls} calls: p50 ${sync.p50Ms} ms, p99 ${sync.p99Ms} ms; then its answer written as JSON (${(answer.bytes / 1e6).toFixed(2)} MB, as socket.io does before sending it): p50 ${answer.p50Ms} ms, p99 ${answer.p99Ms} ms.`,
          "",
          `The sync the web client asks for (every count, the list's first ${paged.limit} conversations), ${paged.calls} calls: p50 ${paged.p50Ms} ms, p99 ${paged.p99Ms} ms; its JSON (${(paged.json.bytes / 1e3).toFixed(0)} kB): p50 ${paged.json.p50Ms} ms, p99 ${paged.json.p99Ms} ms. The next page (\`conversation:list\`, ${paged.limit} more with their counts): p50 ${paged.nextPage.p50Ms} ms, p99 ${paged.nextPage.p99Ms} ms.`,
          "",
          `Redis loses the user's state with ${burst.events} messages to them still to be applied: ${burst.reads} ${burst.reads === 1 ? "rebuild" : "rebuilds"} read the database (${burst.joined} callers joined one under way), every message applied in ${burst.ms} ms.`,
          "",
          `Targets: apply.lua p99 < 500 µs server time: ${apply.serverP99Us < 500 ? "met" : "MISSED"}; sync < 20 ms server time: Redis' part (snapshot p99) ${snapshot.serverP99Us < 20_000 ? "met" : "MISSED"}, the whole sync with its JSON (their p50s added: ${wholeP50Ms} ms) ${wholeP50Ms < 20 ? "met" : "MISSED"}, the client's paged sync with its JSON (${pagedP50Ms} ms) ${pagedP50Ms < 20 ? "met" : "MISSED"}.`,
          "",
        );
        const mentions = 100_000;
        log(`mention flood: one user mentioned ${mentions} times in one group…`);
        const flood = await measureMentionFlood({ redis, db, mentions, applies: quick ? 500 : 2000, snapshots: 50 });
        report.mentionFlood = flood;
        out.push(
          `## Mention flood: one user @-mentioned ${flood.mentions} times in one group, all unread`,
          "",
          table(
            [
              "call",
              "calls",
              "server p50 µs",
              "server p99 µs",
              "server max µs",
              "usec_per_call",
              "round trip p50 ms",
              "round trip p99 ms",
            ],
            [
              times("rebuild from PostgreSQL (ticket.lua + rebuild.lua)", flood.rebuild),
              times("apply.lua: one more mention", flood.apply),
              times("snapshot", flood.snapshot),
              times("apply.lua: the read that clears them all", flood.readAll),
            ],
          ),
          "",
          'What abusers leave a victim who does not read (the mention limit: 1800 people mentioned an hour per sender; docs/security.md, "Mention floods"). The rebuild and the clearing read hold Redis for the times above once; every other call stays as cheap as for anyone.',
          "",
        );
      }
      if (only.has("cluster")) {
        const cluster = await measureCluster({
          dir: path.join(services.tmpDir, "cluster"),
          single: redis,
          db,
          requests: quick ? 60_000 : 200_000,
          log,
        });
        report.cluster = cluster;
        const rate = (n: number | null) => n ?? "n/a";
        out.push(
          `## Redis Cluster: apply.lua per master (${cluster.masters} masters + ${cluster.replicasPerMaster} replica each, ${cluster.clients} clients × pipeline ${cluster.pipeline}, ${cluster.requests} calls a run)`,
          "",
          table(
            ["master", "alone, calls/s", "all masters at once, calls/s"],
            [
              ...cluster.nodes.map((n) => [`:${n.port}`, rate(n.alonePerSec), rate(n.togetherPerSec)]),
              ["all", "", rate(cluster.togetherPerSec)],
            ],
          ),
          "",
          table(
            ["Tally's fan-out (unread.applyMany)", "member applies/s"],
            [
              [
                `on the cluster (one pipeline per node), ${cluster.fanout} members a message`,
                cluster.clusterFanoutPerSec,
              ],
              [`on one redis-server, the same load`, cluster.singleFanoutPerSec],
            ],
          ),
          "",
          `Every process shares this machine's ${os.cpus().length} cores: with all masters busy at once the sum shows the machine's limit, not the cluster's.`,
          ...(cluster.note ? ["", `Note: ${cluster.note}`] : []),
          "",
        );
      }
      if (only.has("e2e") || only.has("fanout")) {
        log("starting two Tally instances (SERVE_UI=0)…");
        instances.push(await startInstance(services, "A"), await startInstance(services, "B"));
      }
      if (only.has("e2e")) {
        log(
          "starting two floor relays (Socket.IO and the Redis adapter; the floor + commit also stores each message)…",
        );
        const floors = [await startFloor(services, "A"), await startFloor(services, "B")] as const;
        instances.push(...floors);
        const [a, b] = [instances[0]!, instances[1]!];
        const conversations = 20;
        const tally = await openTallyTransport(a, b, conversations);
        const floor = await openFloorTransport(floors[0], floors[1], conversations);
        const durableFloor = await openFloorTransport(floors[0], floors[1], conversations, { durable: true });
        const redisCpu: CpuTarget = { name: "Redis", pid: services.redisPid };
        const instanceCpu = (name: string, i: Instance): CpuTarget => ({ name: `instance ${name}`, pid: () => i.pid });
        log(
          "end-to-end: a send on one instance → its arrival at the recipient on the other, Tally, the floor, the floor + commit…",
        );
        try {
          const e2e = await measureEndToEnd({
            systems: [
              {
                name: "Tally",
                transport: tally,
                cpu: [
                  instanceCpu("A", a),
                  instanceCpu("B", b),
                  { name: "PostgreSQL", pid: () => services.postgresPid },
                  redisCpu,
                ],
                stages: () => readSendMetrics([a.url, b.url]),
              },
              {
                name: "floor",
                transport: floor,
                cpu: [instanceCpu("A", floors[0]), instanceCpu("B", floors[1]), redisCpu],
              },
              {
                name: "floor + commit",
                transport: durableFloor,
                cpu: [
                  instanceCpu("A", floors[0]),
                  instanceCpu("B", floors[1]),
                  { name: "PostgreSQL", pid: () => services.postgresPid },
                  redisCpu,
                ],
              },
            ],
            modes: LOAD_MODES,
            rates: e2eRates ?? (quick ? [100, 300, 1000] : [100, 300, 600, 1000, 1500]),
            seconds: e2eSeconds ?? (quick ? 2 : 4),
            warmUp: quick ? { perSec: 500, seconds: 2 } : { perSec: 500, seconds: 4 },
            log,
          });
          report.endToEnd = { ...e2e, cpuTarget: E2E_CPU_TARGET };
          out.push(...endToEndReport(e2e, E2E_CPU_TARGET));
        } finally {
          tally.close();
          floor.close();
          durableFloor.close();
          await Promise.allSettled(floors.map((f) => f.stop()));
        }
      }
      if (only.has("fanout")) {
        // An instance stopped from outside (seen on a shared machine) is replaced rather than failing the run.
        for (const [i, name] of ["A", "B"].entries()) {
          if (instances[i] && !instances[i].alive) {
            log(`instance ${name} is gone; starting a new one for the fan-out measurement`);
            instances[i] = await startInstance(services, `${name}2`);
          }
        }
        log("fan-out: groups of 10, 100 and 1000…");
        const unread = createUnreadService({ redis, db });
        const fanout: FanoutResult[] = await measureFanout({
          db,
          a: instances[0]!,
          sizes: [10, 100, 1000],
          repeats: quick ? 10 : 30,
          applyMany: (events) => unread.applyMany(events),
        });
        report.fanout = fanout;
        out.push(
          "## Group fan-out: one message to every member",
          "",
          table(
            ["members", "apply p50 ms", "apply p99 ms", "µs/member", "send→ack p50 ms", "send→ack p99 ms"],
            fanout.map((f) => [f.members, f.applyP50Ms, f.applyP99Ms, f.applyUsPerMember, f.sendP50Ms, f.sendP99Ms]),
          ),
          "",
        );
      }
      if (only.has("connections")) {
        const pair: [Instance, Instance] = [
          await startInstance(services, "C1", { MAX_SOCKETS_PER_USER: "20" }),
          await startInstance(services, "C2", { MAX_SOCKETS_PER_USER: "20" }),
        ];
        instances.push(...pair);
        const c = await measureConnections({
          instances: pair,
          sockets: quick ? Math.min(wanted, 2000) : wanted,
          holdSeconds: quick ? 5 : 30,
          log,
        });
        report.connections = c;
        const t = c.traffic;
        out.push(
          `## Connections: ${c.sockets} sockets (${c.users} users × ${c.sockets / c.users}) on two instances, held ${c.heldSeconds} s`,
          "",
          `Opened in ${c.connectSeconds} s (${c.connectsPerSec}/s); dropped while held or sending: ${c.dropped}.`,
          "",
          table(
            [
              "instance",
              "sockets",
              "RSS before MB",
              "RSS after MB",
              "heap before MB",
              "heap after MB",
              "RSS/socket KB",
              "heap/socket KB",
            ],
            c.instances.map((i) => [
              i.name,
              i.sockets,
              i.rssBeforeMb,
              i.rssAfterMb,
              i.heapBeforeMb,
              i.heapAfterMb,
              i.rssPerSocketKb,
              i.heapPerSocketKb,
            ]),
          ),
          "",
          `Traffic through them: ${t.offeredPerSec} messages/s for ${t.seconds} s, ${t.acked}/${t.sent} acknowledged (ack p50 ${t.ackP50Ms} ms, p99 ${t.ackP99Ms} ms); ` +
            `pushes to the recipients' sockets ${t.pushes}/${t.expectedPushes} (p50 ${t.pushP50Ms} ms, p99 ${t.pushP99Ms} ms).`,
          "",
        );
      }
      if (only.has("sync-abuse")) {
        log("sync abuse: a user in thousands of groups calling sync in a loop, health latency of everyone else…");
        const limited = await startInstance(services, "limited", { RATE_LIMITS: "" });
        const lifted = await startInstance(services, "lifted");
        instances.push(limited, lifted);
        const abuse = await measureSyncAbuse({
          db,
          instances: [
            { label: "default limits", instance: limited },
            { label: "limits lifted (as before)", instance: lifted },
          ],
          conversations: quick ? 500 : 2000,
          seconds: quick ? 3 : 8,
        });
        report.syncAbuse = abuse;
        out.push(
          `## Sync abuse: one user in ${abuse.conversations} groups calls \`sync\` in a loop from one socket; another client's /api/health`,
          "",
          `One sync of that user, alone: p50 ${abuse.syncP50Ms} ms. Health idle: p50 ${abuse.idle.healthP50Ms} ms, p99 ${abuse.idle.healthP99Ms} ms.`,
          "",
          table(
            ["instance", "syncs asked", "syncs served", "health p50 ms", "health p99 ms", "p50 vs idle", "p99 vs idle"],
            abuse.rows.map((r) => [
              r.label,
              r.syncs,
              r.syncsServed,
              r.healthP50Ms,
              r.healthP99Ms,
              `${r.slowdown}×`,
              `${r.slowdownP99}×`,
            ]),
          ),
          "",
          `Target: with the default limits, health within 2× of idle: p50 ${abuse.rows[0]!.slowdown <= 2 ? "met" : "MISSED"}, p99 ${abuse.rows[0]!.slowdownP99 <= 2 ? "met" : "MISSED"}.`,
          "",
        );
      }
    } finally {
      await Promise.allSettled(instances.map((i) => i.stop()));
      await Promise.allSettled([redis.quit(), db.$disconnect()]);
      await services.stop();
    }
  }

  const seconds = Math.round((Date.now() - began) / 1000);
  report.seconds = seconds;
  out.push(
    `Bench took ${seconds} s on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}), Node ${process.version}; load average before: ${(report.machine as { loadavg: number[] }).loadavg.map((l) => l.toFixed(2)).join(", ")}.`,
  );
  console.log(out.join("\n"));
  if (args.json) {
    await writeFile(args.json, JSON.stringify(report, null, 2));
    log(`wrote ${args.json}`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
