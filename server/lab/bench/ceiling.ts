import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { RedisClient } from "../../redis/client.ts";
import type { Db } from "../../db/prisma.ts";
import { rebuildScriptKeys, unreadScriptKeys } from "../../redis/keys.ts";
import { scripts } from "../../redis/scripts.ts";
import { createUnreadService, type UnreadEvent, type UnreadService } from "../../unread/unread.service.ts";
import { rng } from "../rng.ts";

const execFileAsync = promisify(execFile);

export interface CeilingResult {
  clients: number;
  pipeline: number;
  requests: number;
  /** Conversation ids and seqs are drawn from 0…keyspace−1. */
  keyspace: number;
  /** redis-benchmark runs of apply.lua and of the trivial script, alternated. */
  rounds: number;
  /** redis-benchmark EVALSHA apply.lua, calls per second; null when redis-benchmark is not installed. */
  redisBenchmarkPerSec: number | null;
  /** redis-benchmark EVALSHA apply.lua, best of `rounds` runs alternated with the trivial script's. */
  applyBestPerSec: number | null;
  /** The same for a trivial script (two HINCRBYs on keys of one hash tag), calls per second. */
  trivialPerSec: number | null;
  /** applyBestPerSec / trivialPerSec: apply.lua's raw rate against the cheapest script that writes. */
  applyVsTrivial: number | null;
  /** The same calls through Tally's unread service (applyMany, one pipeline per call), per second. */
  tallyPerSec: number;
  /** tallyPerSec / redisBenchmarkPerSec. */
  ratio: number | null;
  note?: string;
}

const PREFIX = "lab:bench:ceiling:";
const TRIVIAL_LUA = "redis.call('HINCRBY', KEYS[1], ARGV[1], 1)\nredis.call('HINCRBY', KEYS[2], ARGV[1], 1)\nreturn 1";
const USER = 1;

/**
 * The raw rate of apply.lua on this machine (redis-benchmark: `clients` connections, `pipeline` calls in flight
 * on each) against Tally's own path to it: the unread service's applyMany with `pipeline` events per call and
 * `clients` calls in flight, on the one command connection an instance has. Same script, same user, same
 * arguments drawn from the same range. And, with the same load, apply.lua's raw rate against a trivial script's
 * (two HINCRBYs on keys of one hash tag), the best of `rounds` runs of each, alternated.
 */
export async function measureCeiling(opts: {
  redis: RedisClient;
  db: Db;
  host: string;
  port: number;
  clients?: number;
  pipeline?: number;
  requests?: number;
  keyspace?: number;
  /** Runs of each script for the comparison with the trivial one. */
  rounds?: number;
}): Promise<CeilingResult> {
  const clients = opts.clients ?? 50;
  const pipeline = opts.pipeline ?? 16;
  const requests = opts.requests ?? 300_000;
  const keyspace = opts.keyspace ?? 50;
  const keys = unreadScriptKeys(USER, PREFIX);
  await opts.redis.tallyRebuild(...rebuildScriptKeys(USER, PREFIX), "bench", "merge");
  const sha = (await opts.redis.script("LOAD", scripts.tallyApply.lua)) as string;

  const load = { host: opts.host, port: opts.port, clients, pipeline, requests, keyspace };
  const applyRaw = () => redisBenchmark(load, sha, keys, ["__rand_int__", "__rand_int__", "0"]);
  const raw = await applyRaw();
  // The cheapest script that still writes two keys of one user: what running any script costs Redis. Alternated
  // with apply.lua, best of each, so both meet the same machine (others' load moves a single run a lot).
  const trivialKeys = [`${PREFIX}{u:${USER}}:trivial-a`, `${PREFIX}{u:${USER}}:trivial-b`];
  const trivialSha = (await opts.redis.script("LOAD", TRIVIAL_LUA)) as string;
  const rounds = opts.rounds ?? 3;
  const runs = { apply: [raw], trivial: [] as BenchRun[] };
  for (let round = 0; round < rounds; round++) {
    if (round > 0) runs.apply.push(await applyRaw());
    runs.trivial.push(await redisBenchmark(load, trivialSha, trivialKeys, ["__rand_int__"]));
  }
  const best = (list: BenchRun[]) => Math.max(0, ...list.map((r) => r.perSec ?? 0)) || null;
  const applyBest = best(runs.apply);
  const trivialPerSec = best(runs.trivial);
  const note = [...runs.apply, ...runs.trivial].find((r) => r.note)?.note;
  const redisBenchmarkPerSec = raw.perSec;

  const unread = createUnreadService({ redis: opts.redis, db: opts.db, prefix: PREFIX });
  const random = rng(42);
  const batch = () =>
    Array.from({ length: pipeline }, () => ({
      userId: USER,
      conversationId: Math.floor(random() * keyspace),
      seenSeq: Math.floor(random() * keyspace),
      readSeq: 0,
    }));
  const tallyPerSec = await applyManyRate(unread, batch, Math.ceil(requests / pipeline), clients);
  await opts.redis.del(...keys, ...trivialKeys);
  const share = (a: number | null, b: number | null) => (a && b ? Math.round((a / b) * 100) / 100 : null);
  return {
    clients,
    pipeline,
    requests,
    keyspace,
    rounds,
    redisBenchmarkPerSec,
    applyBestPerSec: applyBest,
    trivialPerSec,
    applyVsTrivial: share(applyBest, trivialPerSec),
    tallyPerSec,
    ratio: share(tallyPerSec, redisBenchmarkPerSec),
    ...(note ? { note } : {}),
  };
}

/**
 * Events per second through the unread service's applyMany: `calls` calls of `batch()`'s events, `clients` of them
 * in flight at once.
 */
export async function applyManyRate(
  unread: UnreadService,
  batch: () => UnreadEvent[],
  calls: number,
  clients: number,
): Promise<number> {
  let issued = 0;
  let events = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (issued < calls) {
        issued++;
        const next = batch();
        events += next.length;
        await unread.applyMany(next);
      }
    }),
  );
  return Math.round((events * 1000) / (performance.now() - started));
}

export interface BenchRun {
  perSec: number | null;
  note?: string;
}

/** Where redis-benchmark points and how hard: `clients` connections with `pipeline` calls in flight on each. */
export interface BenchLoad {
  host: string;
  port: number;
  clients: number;
  pipeline: number;
  requests: number;
  keyspace: number;
}

/** redis-benchmark EVALSHA `sha` with `keys` and `args` (`__rand_int__` drawn from the keyspace), calls/s. */
export async function redisBenchmark(load: BenchLoad, sha: string, keys: string[], args: string[]): Promise<BenchRun> {
  try {
    const { stdout } = await execFileAsync(
      "redis-benchmark",
      [
        "-h",
        load.host,
        "-p",
        String(load.port),
        "-c",
        String(load.clients),
        "-P",
        String(load.pipeline),
        "-n",
        String(load.requests),
        "-r",
        String(load.keyspace),
        "--csv",
        "EVALSHA",
        sha,
        String(keys.length),
        ...keys,
        ...args,
      ],
      { maxBuffer: 1 << 20 },
    );
    const row = stdout
      .trim()
      .split("\n")
      .find((line) => line.startsWith('"EVALSHA'));
    const value = row ? Number(JSON.parse(`[${row}]`)[1]) : NaN;
    if (Number.isFinite(value)) return { perSec: Math.round(value) };
    return { perSec: null, note: `could not read redis-benchmark's output: ${stdout.slice(0, 200)}` };
  } catch (err) {
    return {
      perSec: null,
      note:
        err instanceof Error && "code" in err && err.code === "ENOENT"
          ? "redis-benchmark is not installed (Debian: apt-get install redis-tools)"
          : `redis-benchmark failed: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
}
