import { spawn, type ChildProcess } from "node:child_process";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { supervise } from "../../server/embedded/child-output.ts";
import { LIFTED_LIMITS } from "../../server/limits/limits.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

// Next.js prepares itself before the server listens; on two busy cores that takes a while.
const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 20_000;
const KEEP_LINES = 60;

export interface TallyServerOptions {
  /** A label for error messages, e.g. "A". */
  name: string;
  port: number;
  databaseUrl: string;
  redisUrl: string;
  /** This instance's DATA_DIR; created if missing. */
  dataDir: string;
  /** Extra environment, e.g. { SEED_DEMO: "1" }. */
  env?: Record<string, string>;
}

export interface TallyServer {
  name: string;
  url: string;
  port: number;
  /** SIGTERM, then SIGKILL if it lingers; resolves once the process has exited. Safe to call twice. */
  stop(): Promise<void>;
}

/** Starts `node --import tsx server/index.ts` the way production does and waits until /api/health answers 200. */
export async function startTallyServer(opts: TallyServerOptions): Promise<TallyServer> {
  await mkdir(opts.dataDir, { recursive: true });
  const url = `http://127.0.0.1:${opts.port}`;
  const child = spawn(process.execPath, ["--import", "tsx", "server/index.ts"], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(opts.port),
      HOST: "127.0.0.1",
      DATABASE_URL: opts.databaseUrl,
      REDIS_URL: opts.redisUrl,
      SEED_DEMO: "0",
      DATA_DIR: opts.dataDir,
      NODE_ENV: "production",
      LOG_LEVEL: "warn",
      // Every test signs up its users from 127.0.0.1; limits have tests of their own (server/security.int.test.ts).
      RATE_LIMITS: LIFTED_LIMITS,
      ...opts.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = tail(child, opts.name);
  // A runner that dies without teardown must not leave servers holding the ports and the database.
  const { exited, stop } = supervise(child, { signal: "SIGTERM", onParentExit: "SIGKILL", timeoutMs: STOP_TIMEOUT_MS });

  try {
    await Promise.race([
      waitForHealth(url, child),
      exited.then(() => {
        throw new Error(`exited with ${child.exitCode ?? child.signalCode} before it was ready`);
      }),
      new Promise<never>((_, reject) => child.once("error", reject)),
    ]);
  } catch (err) {
    await stop();
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`Tally server ${opts.name} on ${url}: ${reason}\n--- its last output ---\n${output()}`, {
      cause: err,
    });
  }
  return { name: opts.name, url, port: opts.port, stop };
}

async function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2_000) });
      if (res.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`/api/health did not answer 200 within ${READY_TIMEOUT_MS} ms`);
}

// At LOG_LEVEL=warn a healthy server prints nothing, so whatever it prints is worth seeing next to the test.
function tail(child: ChildProcess, name: string): () => string {
  const lines: string[] = [];
  const onData = (chunk: Buffer): void => {
    for (const line of chunk.toString("utf8").split("\n")) {
      if (line.trim() === "") continue;
      process.stderr.write(`[tally ${name}] ${line}\n`);
      lines.push(line);
      if (lines.length > KEEP_LINES) lines.shift();
    }
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  return () => lines.join("\n");
}

/** Where the global setup keeps per-instance data directories. */
export function instanceDataDir(tmpDir: string, name: string): string {
  return path.join(tmpDir, `tally-${name}`);
}
