import { LIFTED_LIMITS } from "../../limits/limits.ts";
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../embedded/ports.ts";
import { startThrowawayServices } from "../../embedded/services.ts";

const root = fileURLToPath(new URL("../../..", import.meta.url));

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

export interface Instance {
  url: string;
  /** False once the process exited. */
  alive(): boolean;
  stop(): Promise<void>;
}

/** A Tally instance as `npm start` runs it, without the UI (SERVE_UI=0), on a free port. */
export async function startInstance(
  services: BenchServices,
  name: string,
  env: Record<string, string> = {},
): Promise<Instance> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "server/index.ts"], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: services.databaseUrl,
      REDIS_URL: services.redisUrl,
      SEED_DEMO: "0",
      SERVE_UI: "0",
      DATA_DIR: path.join(services.tmpDir, `instance-${name}`),
      NODE_ENV: "production",
      LOG_LEVEL: process.env.BENCH_INSTANCE_LOG_LEVEL ?? "warn",
      // The benchmark offers far more than one person types, from one address: limits are not what it measures.
      RATE_LIMITS: LIFTED_LIMITS,
      ...env,
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  let stopping = false;
  const exited = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      if (!stopping) process.stderr.write(`Tally instance ${name} exited unexpectedly (${code ?? signal})\n`);
      resolve();
    }),
  );
  const onExit = () => void child.kill("SIGKILL");
  process.once("exit", onExit);
  const stop = async () => {
    stopping = true;
    process.removeListener("exit", onExit);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Tally instance ${name} exited during start-up`);
    try {
      if ((await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(1000) })).status === 200) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Tally instance ${name} did not become healthy within 60 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { url, stop, alive: () => child.exitCode === null && child.signalCode === null };
}
