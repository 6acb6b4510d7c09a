import { spawn, type ChildProcess } from "node:child_process";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { connect } from "node:net";
import { logger } from "../log.ts";
import { stopOrphan } from "./orphans.ts";
import { collectOutput, supervise } from "./child-output.ts";
import { freePort } from "./ports.ts";

export const REDIS_SERVER_MISSING =
  "redis-server was not found on PATH. Install it (Debian/Ubuntu: sudo apt-get install redis-server; " +
  "macOS: brew install redis) or set REDIS_URL to an existing Redis.";

const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 10_000;
// A restart on the same port can overlap the previous server's last moments.
const PORT_RETRY_MS = 3_000;

export interface RedisServerOptions {
  /** Defaults to a free port. */
  port?: number;
  /** Working directory of redis-server (nothing is persisted, but Redis wants one); defaults to the cwd. */
  dir?: string;
  /** More redis-server arguments, e.g. a cluster node's (server/embedded/redis-cluster.ts). */
  args?: string[];
  /** How many of its last lines of output `output()` keeps (default 40). */
  keepLines?: number;
  /**
   * In a process group of its own: a signal to the starter's group (a terminal's Ctrl-C) does not reach it, and the
   * starter stops it after what uses it (`npm start`'s embedded services). Tests leave it in theirs, so that stopping
   * a test run stops its servers.
   */
  ownProcessGroup?: boolean;
}

export interface RedisServer {
  url: string;
  port: number;
  /** The running redis-server's process id (a new one after restart()), e.g. to sample its CPU time. */
  readonly pid: number;
  /** Graceful shutdown; resolves once the process has exited. Safe to call twice, and after kill(). */
  stop(): Promise<void>;
  /** Simulates a crash: sends `signal` (default SIGKILL) and returns at once. */
  kill(signal?: NodeJS.Signals): void;
  /** Stops (or reaps a killed) server and starts an empty one on the same port. */
  restart(): Promise<void>;
  /** The running server's last lines of output, e.g. to say why a cluster node did not fail over. */
  output(): string;
}

/** A throw-away redis-server on 127.0.0.1 that persists nothing. Starting it again on the same port works. */
export async function startRedisServer(opts: RedisServerOptions = {}): Promise<RedisServer> {
  if (opts.dir !== undefined) await mkdir(opts.dir, { recursive: true });
  let started: Running | undefined;
  for (let attempt = 1; started === undefined; attempt++) {
    try {
      started = await spawnUntilReady(opts.port ?? (await freePort()), opts, opts.port !== undefined);
    } catch (err) {
      if (!(err instanceof PortInUseError) || opts.port !== undefined || attempt >= 3) throw err;
    }
  }
  let current = started;
  const port = current.port;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return current.pid;
    },
    stop: () => current.stop(),
    kill: (signal = "SIGKILL") => current.kill(signal),
    restart: async () => {
      await current.stop();
      current = await spawnUntilReady(port, opts, true);
    },
    output: () => current.output(),
  };
}

class PortInUseError extends Error {}

interface Running {
  port: number;
  pid: number;
  stop(): Promise<void>;
  kill(signal: NodeJS.Signals): void;
  output(): string;
}

async function spawnUntilReady(port: number, opts: RedisServerOptions, retryBusyPort: boolean): Promise<Running> {
  const deadline = Date.now() + PORT_RETRY_MS;
  for (;;) {
    try {
      return await spawnOnce(port, opts);
    } catch (err) {
      if (!(err instanceof PortInUseError) || !retryBusyPort || Date.now() > deadline) throw err;
      await sleep(100);
    }
  }
}

async function spawnOnce(port: number, opts: RedisServerOptions): Promise<Running> {
  const { dir, keepLines } = opts;
  const args = [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    ...(opts.args ?? []),
  ];
  if (dir !== undefined) {
    // A pidfile lets the next start stop a redis-server whose Tally process was killed without stopping it.
    const pidFile = path.join(dir, "redis.pid");
    const orphan = await stopOrphan(pidFile, "redis-server");
    if (orphan !== null) logger.warn({ orphanPid: orphan }, "stopped a redis-server left by a Tally process that died");
    args.push("--dir", dir, "--pidfile", pidFile);
  }
  const child = spawn("redis-server", args, {
    stdio: ["ignore", "pipe", "pipe"],
    detached: opts.ownProcessGroup ?? false,
  });
  const log = collectOutput(child, "redis", keepLines);
  const spawnFailed = new Promise<never>((_, reject) =>
    child.once("error", (err) =>
      reject("code" in err && err.code === "ENOENT" ? new Error(REDIS_SERVER_MISSING, { cause: err }) : err),
    ),
  );
  // SIGKILL when this process dies first: a crashed test run must not leave redis-server running.
  const { exited, stop } = supervise(child, { signal: "SIGTERM", onParentExit: "SIGKILL", timeoutMs: STOP_TIMEOUT_MS });

  const polling = new AbortController();
  try {
    await Promise.race([
      spawnFailed,
      waitUntilReady(child, port, polling.signal),
      exited.then(() => {
        const output = log.text();
        const message = `redis-server exited during startup (code ${child.exitCode ?? child.signalCode}):\n${output}`;
        throw /address already in use/i.test(output) ? new PortInUseError(message) : new Error(message);
      }),
    ]);
  } catch (err) {
    polling.abort();
    await stop();
    throw err;
  }
  logger.debug({ port, pid: child.pid }, "started redis-server");
  return { port, pid: child.pid!, stop, kill: (signal) => void child.kill(signal), output: () => log.text() };
}

// Ready means *our* process answers: another Redis on the port (say the machine's own) would answer PING too.
// Settles only on success or timeout; a process that died or never spawned is reported by the other racers.
async function waitUntilReady(child: ChildProcess, port: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (signal.aborted) return;
    if (child.pid !== undefined && (await serverProcessId(port)) === child.pid) return;
    await sleep(50);
  }
  throw new Error(`redis-server on port ${port} did not answer within ${READY_TIMEOUT_MS} ms`);
}

function serverProcessId(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    let reply = "";
    const done = (pid: number | undefined): void => {
      socket.destroy();
      resolve(pid);
    };
    socket.setTimeout(1_000, () => done(undefined));
    socket.once("error", () => done(undefined));
    socket.once("close", () => done(undefined));
    socket.once("connect", () => socket.write("INFO server\r\n"));
    socket.on("data", (chunk: Buffer) => {
      reply += chunk.toString("utf8");
      const match = /process_id:(\d+)/.exec(reply);
      if (match?.[1] !== undefined) done(Number.parseInt(match[1], 10));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
