import { spawn, type ChildProcess } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { redisTargetEnv, type RedisTarget } from "../redis/client.ts";
import { supervise } from "./child-output.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const KEEP_LINES = 200;

export interface TallyProcessOptions {
  /** A label for logs and errors, e.g. "A" or "instance-2". */
  name: string;
  port: number;
  /** HOST to listen on; 127.0.0.1 unless given. */
  host?: string;
  databaseUrl: string;
  /** The Redis every instance shares: a URL, or a cluster's nodes. */
  redis: RedisTarget | string;
  /** This instance's DATA_DIR; created if missing. */
  dataDir: string;
  /** More environment on top of this process's own, e.g. { SERVE_UI: "0", LOG_LEVEL: "warn" }. */
  env?: Record<string, string | undefined>;
  /**
   * "inherit": the instance prints to this terminal (npm run start:cluster, the benchmark);
   * "prefix": every line goes to stderr as "[tally <name>] …" (Playwright); "quiet": kept for `log` only.
   */
  output?: "inherit" | "prefix" | "quiet";
  /**
   * The module to run, relative to the repository root: server/index.ts unless given. Another entry must take the
   * same environment (PORT, HOST) and answer /api/health, as the benchmark's floor relay does.
   */
  entry?: string;
  /** Options for node itself, e.g. ["--cpu-prof", "--cpu-prof-dir=/tmp/prof"] (NODE_OPTIONS refuses --cpu-prof). */
  nodeArgs?: string[];
  /** How long start() waits for /api/health to answer 200. */
  readyTimeoutMs?: number;
  /** How long stop() waits after SIGTERM before SIGKILL. */
  stopTimeoutMs?: number;
}

/**
 * One Tally server process (`node --import tsx server/index.ts`) for the cluster script, the end-to-end tests,
 * the fault model and the benchmark: started on a given port, ready once /api/health answers 200, killed as a
 * crash would (SIGKILL) or stopped, and restarted on the same port so its clients find it again. If this process
 * dies, the instance is killed with it.
 */
export class TallyProcess {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  private child: ChildProcess | null = null;
  private supervisor: ReturnType<typeof supervise> | null = null;
  private readonly lines: string[] = [];

  private constructor(private options: TallyProcessOptions) {
    this.name = options.name;
    this.port = options.port;
    this.url = `http://127.0.0.1:${options.port}`;
  }

  /** Starts the process and waits until it is healthy; on failure it is stopped and the error quotes its output. */
  static async start(options: TallyProcessOptions): Promise<TallyProcess> {
    const instance = new TallyProcess(options);
    await instance.restart();
    return instance;
  }

  get alive(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The running process's id, e.g. to sample its CPU time; undefined while none runs. */
  get pid(): number | undefined {
    return this.alive ? this.child?.pid : undefined;
  }

  /** The last lines the process printed (empty with output "inherit"). */
  get log(): string {
    return this.lines.join("\n");
  }

  /** Resolves once the current process has exited (at once if none runs). */
  exited(): Promise<void> {
    return this.alive && this.supervisor ? this.supervisor.exited : Promise.resolve();
  }

  /** Starts the process again on the same port and data directory, with `env` merged over the previous one. */
  async restart(env: Record<string, string | undefined> = {}): Promise<void> {
    if (this.alive) throw new Error(`Tally ${this.name} is still running`);
    this.options = { ...this.options, env: { ...this.options.env, ...env } };
    const { options } = this;
    await mkdir(options.dataDir, { recursive: true });
    const childEnv: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(options.port),
      HOST: options.host ?? "127.0.0.1",
      DATABASE_URL: options.databaseUrl,
      DATA_DIR: options.dataDir,
      SEED_DEMO: "0",
    };
    for (const [key, value] of Object.entries(redisTargetEnv(options.redis))) {
      if (value === undefined) delete childEnv[key];
      else childEnv[key] = value;
    }
    for (const [key, value] of Object.entries(options.env ?? {})) {
      if (value === undefined) delete childEnv[key];
      else childEnv[key] = value;
    }
    const output = options.output ?? "quiet";
    const child = spawn(
      process.execPath,
      [...(options.nodeArgs ?? []), "--import", "tsx", join(root, options.entry ?? join("server", "index.ts"))],
      {
        cwd: root,
        env: childEnv,
        stdio: output === "inherit" ? ["ignore", "inherit", "inherit"] : ["ignore", "pipe", "pipe"],
      },
    );
    this.child = child;
    this.supervisor = supervise(child, {
      signal: "SIGTERM",
      onParentExit: "SIGKILL",
      timeoutMs: options.stopTimeoutMs ?? 10_000,
    });
    this.collect(child, output === "prefix");
    try {
      await this.waitForHealth(options.readyTimeoutMs ?? 60_000);
    } catch (err) {
      await this.stop();
      const reason = err instanceof Error ? err.message : String(err);
      throw new Error(`Tally ${this.name} on ${this.url}: ${reason}\n--- its last output ---\n${this.log}`, {
        cause: err,
      });
    }
  }

  /** Kills the process (SIGKILL by default, as a crash would) and resolves once it has exited. */
  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const done = this.exited();
    if (this.alive) this.child?.kill(signal);
    await done;
    await this.supervisor?.stop();
  }

  /** SIGTERM, then SIGKILL if it lingers; resolves once the process has exited. Safe to call twice. */
  async stop(): Promise<void> {
    await this.supervisor?.stop();
  }

  private collect(child: ChildProcess, echo: boolean): void {
    const onData = (chunk: Buffer): void => {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line.trim() === "") continue;
        if (echo) process.stderr.write(`[tally ${this.name}] ${line}\n`);
        this.lines.push(line);
        if (this.lines.length > KEEP_LINES) this.lines.shift();
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
  }

  private async waitForHealth(timeoutMs: number): Promise<void> {
    const child = this.child;
    const failed = new Promise<never>((_, reject) => {
      child?.once("error", reject);
      void this.exited().then(() =>
        reject(new Error(`exited with ${child?.exitCode ?? child?.signalCode} before it was ready`)),
      );
    });
    failed.catch(() => undefined);
    const deadline = Date.now() + timeoutMs;
    const poll = async (): Promise<void> => {
      while (Date.now() < deadline) {
        if (!this.alive) return;
        try {
          const res = await fetch(`${this.url}/api/health`, { signal: AbortSignal.timeout(2_000) });
          if (res.status === 200) return;
        } catch {
          // Not listening yet.
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`/api/health did not answer 200 within ${timeoutMs} ms`);
    };
    await Promise.race([poll(), failed]);
    if (!this.alive) await failed;
  }
}
