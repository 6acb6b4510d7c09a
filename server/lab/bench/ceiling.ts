import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { RedisClient } from "../../redis/client.ts";
import type { Db } from "../../db/prisma.ts";
import { unreadScriptKeys } from "../../redis/keys.ts";
import { scripts } from "../../redis/scripts.ts";
import { createUnreadService } from "../../unread/unread.service.ts";
import { rng } from "../rng.ts";

const execFileAsync = promisify(execFile);

export interface CeilingResult {
  clients: number;
  pipeline: number;
  requests: number;
  /** Conversation ids and seqs are drawn from 0…keyspace−1. */
  keyspace: number;
  /** redis-benchmark EVALSHA apply.lua, calls per second; null when redis-benchmark is not installed. */
  redisBenchmarkPerSec: number | null;
  /** The same calls through Tally's unread service (applyMany, one pipeline per call), per second. */
  tallyPerSec: number;
  /** tallyPerSec / redisBenchmarkPerSec. */
  ratio: number | null;
  note?: string;
}

const PREFIX = "lab:bench:ceiling:";
const USER = 1;

/**
 * The raw rate of apply.lua on this machine (redis-benchmark: `clients` connections, `pipeline` calls in flight
 * on each) against Tally's own path to it: the unread service's applyMany with `pipeline` events per call and
 * `clients` calls in flight, on the one command connection an instance has. Same script, same user, same
 * arguments drawn from the same range.
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
}): Promise<CeilingResult> {
  const clients = opts.clients ?? 50;
  const pipeline = opts.pipeline ?? 16;
  const requests = opts.requests ?? 300_000;
  const keyspace = opts.keyspace ?? 50;
  const keys = unreadScriptKeys(USER, PREFIX);
  await opts.redis.tallyRebuild(...keys, "bench", "merge");
  const sha = (await opts.redis.script("LOAD", scripts.tallyApply.lua)) as string;

  let redisBenchmarkPerSec: number | null = null;
  let note: string | undefined;
  try {
    const { stdout } = await execFileAsync(
      "redis-benchmark",
      [
        "-h",
        opts.host,
        "-p",
        String(opts.port),
        "-c",
        String(clients),
        "-P",
        String(pipeline),
        "-n",
        String(requests),
        "-r",
        String(keyspace),
        "--csv",
        "EVALSHA",
        sha,
        String(keys.length),
        ...keys,
        "__rand_int__",
        "__rand_int__",
        "0",
      ],
      { maxBuffer: 1 << 20 },
    );
    const row = stdout
      .trim()
      .split("\n")
      .find((line) => line.startsWith('"EVALSHA'));
    const value = row ? Number(JSON.parse(`[${row}]`)[1]) : NaN;
    if (Number.isFinite(value)) redisBenchmarkPerSec = Math.round(value);
    else note = `could not read redis-benchmark's output: ${stdout.slice(0, 200)}`;
  } catch (err) {
    note =
      err instanceof Error && "code" in err && err.code === "ENOENT"
        ? "redis-benchmark is not installed (Debian: apt-get install redis-tools)"
        : `redis-benchmark failed: ${err instanceof Error ? err.message : String(err)}`;
  }

  const unread = createUnreadService({ redis: opts.redis, db: opts.db, prefix: PREFIX });
  const random = rng(42);
  const batch = () =>
    Array.from({ length: pipeline }, () => ({
      userId: USER,
      conversationId: Math.floor(random() * keyspace),
      seenSeq: Math.floor(random() * keyspace),
      readSeq: 0,
    }));
  const batches = Math.ceil(requests / pipeline);
  let issued = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (issued < batches) {
        issued++;
        await unread.applyMany(batch());
      }
    }),
  );
  const tallyPerSec = Math.round((batches * pipeline * 1000) / (performance.now() - started));
  await opts.redis.del(...keys);
  return {
    clients,
    pipeline,
    requests,
    keyspace,
    redisBenchmarkPerSec,
    tallyPerSec,
    ratio: redisBenchmarkPerSec ? Math.round((tallyPerSec / redisBenchmarkPerSec) * 100) / 100 : null,
    ...(note ? { note } : {}),
  };
}
