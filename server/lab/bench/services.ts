import { LIFTED_LIMITS } from "../../limits/limits.ts";
import path from "node:path";
import { freePort } from "../../embedded/ports.ts";
import { startThrowawayServices } from "../../embedded/services.ts";
import { TallyProcess } from "../../embedded/tally-process.ts";

export interface BenchServices {
  tmpDir: string;
  databaseUrl: string;
  redisUrl: string;
  redisPort: number;
  /** Process ids, to sample CPU time: the postmaster (its backends are its children) and redis-server. */
  postgresPid: number;
  redisPid: () => number;
  stop(): Promise<void>;
}

/** A throw-away PostgreSQL and redis-server for the benchmark, in a temp directory; never the machine's own. */
export async function startBenchServices(): Promise<BenchServices> {
  const services = await startThrowawayServices({
    name: "bench",
    // Durable, as `npm start` runs it: every send's commit waits for its WAL flush.
    durable: process.env.BENCH_PG_DURABLE !== "0",
    migrate: true,
  });
  return {
    tmpDir: services.tmpDir,
    databaseUrl: services.postgres.url,
    redisUrl: services.redis.url,
    redisPort: services.redis.port,
    postgresPid: services.postgres.pid,
    redisPid: () => services.redis.pid,
    stop: services.stop,
  };
}

export type Instance = TallyProcess;

/** What the bench's Node processes are started on: their data directories' parent, the database and Redis. */
type ProcessServices = Pick<BenchServices, "tmpDir" | "databaseUrl" | "redisUrl">;

/**
 * BENCH_CPU_PROF_DIR=<dir> profiles the bench's Node processes (node --cpu-prof), each into its own <dir>/<name>/:
 * one .cpuprofile per thread (the main thread's, and that of tsx's module loader), written when the process stops.
 * Not --cpu-prof-name: every thread would write to that one file, and the loader's would replace the main one's.
 */
function profileArgs(name: string): { nodeArgs?: string[] } {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  return dir ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${path.resolve(dir, name)}`] } : {};
}

/** A Node process of the bench on a free port, printing to this terminal; `file` names its data and profile directories. */
async function startProcess(
  services: ProcessServices,
  opts: { name: string; file: string; entry?: string; env: Record<string, string> },
): Promise<Instance> {
  return TallyProcess.start({
    name: opts.name,
    ...(opts.entry ? { entry: opts.entry } : {}),
    port: await freePort(),
    databaseUrl: services.databaseUrl,
    redis: services.redisUrl,
    dataDir: path.join(services.tmpDir, opts.file),
    output: "inherit",
    ...profileArgs(opts.file),
    env: opts.env,
  });
}

/**
 * A Tally instance as `npm start` runs it, without the UI (SERVE_UI=0). Profiled into <BENCH_CPU_PROF_DIR>/tally-<name>/ when
 * BENCH_CPU_PROF_DIR is set.
 */
export async function startInstance(
  services: BenchServices,
  name: string,
  env: Record<string, string> = {},
): Promise<Instance> {
  return startProcess(services, {
    name,
    file: `tally-${name}`,
    env: {
      SERVE_UI: "0",
      NODE_ENV: "production",
      LOG_LEVEL: process.env.BENCH_INSTANCE_LOG_LEVEL ?? "warn",
      // The benchmark offers far more than one person types, from one address: limits are not what it measures.
      RATE_LIMITS: LIFTED_LIMITS,
      ...env,
    },
  });
}

/**
 * One process of the floor relay (floor-relay.ts) on the bench's Redis, started and stopped as Tally's instances
 * are, so that it competes for the same cores. Profiled into <BENCH_CPU_PROF_DIR>/floor-<name>/.
 */
export async function startFloor(services: ProcessServices, name: string): Promise<Instance> {
  return startProcess(services, {
    name: `floor ${name}`,
    file: `floor-${name}`,
    entry: path.join("server", "lab", "bench", "floor-relay.ts"),
    env: { NODE_ENV: "production", LOG_LEVEL: process.env.BENCH_INSTANCE_LOG_LEVEL ?? "warn" },
  });
}
