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
    stop: services.stop,
  };
}

export type Instance = TallyProcess;

/**
 * A Tally instance as `npm start` runs it, without the UI (SERVE_UI=0), on a free port, printing to this terminal.
 * BENCH_CPU_PROF_DIR=<dir> profiles it (node --cpu-prof): a .cpuprofile per instance lands there when it stops.
 */
export async function startInstance(
  services: BenchServices,
  name: string,
  env: Record<string, string> = {},
): Promise<Instance> {
  return TallyProcess.start({
    name,
    port: await freePort(),
    databaseUrl: services.databaseUrl,
    redis: services.redisUrl,
    dataDir: path.join(services.tmpDir, `instance-${name}`),
    output: "inherit",
    ...(process.env.BENCH_CPU_PROF_DIR
      ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF_DIR)}`] }
      : {}),
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
