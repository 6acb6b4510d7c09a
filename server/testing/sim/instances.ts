import { LIFTED_LIMITS } from "../../limits/limits.ts";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../embedded/ports.ts";

const root = fileURLToPath(new URL("../../..", import.meta.url));

export interface InstanceOptions {
  databaseUrl: string;
  redisUrl: string;
  /** Kill the process right after a send commits (TALLY_FAULT=crash-after-commit). */
  crashAfterCommit?: boolean;
  relayMs?: number;
}

/**
 * A real Tally server process (`server/index.ts`, API and Socket.IO only), so that faults can kill it with
 * SIGKILL exactly as a crash would. Restart keeps the port, so clients find it again.
 */
export class Instance {
  private child: ChildProcess | null = null;
  private output: string[] = [];
  private dataDir = "";
  readonly url: string;

  private constructor(
    readonly port: number,
    private options: InstanceOptions,
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  static async start(options: InstanceOptions): Promise<Instance> {
    const instance = new Instance(await freePort(), options);
    instance.dataDir = await mkdtemp(path.join(os.tmpdir(), "tally-sim-"));
    await instance.spawn();
    return instance;
  }

  get alive(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The last lines the process printed (for failure reports). */
  get log(): string {
    return this.output.join("");
  }

  async spawn(overrides: Partial<InstanceOptions> = {}): Promise<void> {
    this.options = { ...this.options, ...overrides };
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_ENV: "production",
      PORT: String(this.port),
      HOST: "127.0.0.1",
      DATABASE_URL: this.options.databaseUrl,
      REDIS_URL: this.options.redisUrl,
      DATA_DIR: this.dataDir,
      SEED_DEMO: "0",
      SERVE_UI: "0",
      LOG_LEVEL: "warn",
      OUTBOX_RELAY_MS: String(this.options.relayMs ?? 300),
      RECONCILE_INTERVAL_S: "0",
      RATE_LIMITS: LIFTED_LIMITS,
    };
    delete env.TALLY_FAULT;
    if (this.options.crashAfterCommit) env.TALLY_FAULT = "crash-after-commit";
    const child = spawn(process.execPath, ["--import", "tsx", path.join(root, "server", "index.ts")], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      env,
    });
    const keep = (chunk: Buffer) => {
      this.output.push(chunk.toString());
      if (this.output.length > 200) this.output.shift();
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    this.child = child;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (!this.alive) throw new Error(`instance on ${this.port} exited during start:\n${this.log}`);
      try {
        const res = await fetch(`${this.url}/api/health`);
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`instance on ${this.port} did not become healthy:\n${this.log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Resolves once the process has exited (after a crash fault or a kill). */
  exited(): Promise<void> {
    const child = this.child;
    if (!child || !this.alive) return Promise.resolve();
    return new Promise((resolve) => child.once("exit", () => resolve()));
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const done = this.exited();
    this.child?.kill(signal);
    return done;
  }

  async stop(): Promise<void> {
    if (this.alive) {
      const done = this.exited();
      this.child?.kill("SIGTERM");
      const timer = setTimeout(() => this.child?.kill("SIGKILL"), 10_000);
      await done;
      clearTimeout(timer);
    }
    await rm(this.dataDir, { recursive: true, force: true });
  }
}
