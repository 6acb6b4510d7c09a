import { spawn } from "node:child_process";
import { chmod, chown, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresOsUser, startEmbeddedPostgres, type EmbeddedPostgres } from "./postgres.ts";

let tmp: string;
let dataDir: string;
const running: EmbeddedPostgres[] = [];

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "tally-pg-dev-"));
  const owner = await postgresOsUser();
  if (owner !== undefined) await chown(tmp, owner.uid, owner.gid);
  dataDir = path.join(tmp, "cluster");
});

afterAll(async () => {
  await Promise.all(running.map((server) => server.stop()));
  await rm(tmp, { recursive: true, force: true });
});

async function start(): Promise<EmbeddedPostgres> {
  const server = await startEmbeddedPostgres({ dataDir, durable: false });
  running.push(server);
  return server;
}

async function sql<R extends pg.QueryResultRow>(url: string, text: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text)).rows;
  } finally {
    await client.end();
  }
}

async function waitForDeath(pid: number): Promise<void> {
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("startEmbeddedPostgres", () => {
  it("initialises once, creates the database, and reuses the data directory on the next start", async () => {
    const first = await start();
    expect(first.url).toBe(`postgresql://postgres:postgres@127.0.0.1:${first.port}/tally`);
    expect(first.adminUrl).toBe(`postgresql://postgres:postgres@127.0.0.1:${first.port}/postgres`);
    await sql(first.url, "CREATE TABLE kept (id int); INSERT INTO kept VALUES (42)");
    const initialisedAt = (await stat(path.join(dataDir, "PG_VERSION"))).mtimeMs;
    await first.stop();
    await first.stop();

    const second = await start();
    expect(await sql(second.url, "SELECT id FROM kept")).toEqual([{ id: 42 }]);
    expect((await stat(path.join(dataDir, "PG_VERSION"))).mtimeMs).toBe(initialisedAt);
    await second.stop();
  });

  it("refuses a second server on a data directory that is in use", async () => {
    const server = await start();
    await expect(startEmbeddedPostgres({ dataDir })).rejects.toThrow(/already running/);
    await server.stop();
  });

  it("starts after a crash left postmaster.pid behind", async () => {
    const server = await start();
    const pid = Number.parseInt((await readFile(path.join(dataDir, "postmaster.pid"), "utf8")).split("\n")[0]!, 10);
    process.kill(pid, "SIGKILL");
    await waitForDeath(pid);
    await server.stop();

    const again = await start();
    expect(await sql(again.url, "SELECT id FROM kept")).toEqual([{ id: 42 }]);
    await again.stop();
  });

  it("ignores a postmaster.pid whose PID now belongs to an unrelated process", async () => {
    const squatter = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      await writeFile(path.join(dataDir, "postmaster.pid"), `${squatter.pid}\n${dataDir}\n0\n5432\n`);
      const server = await start();
      expect(await sql(server.url, "SELECT id FROM kept")).toEqual([{ id: 42 }]);
      await server.stop();
    } finally {
      squatter.kill();
    }
  });
});

// PostgreSQL refuses to run as root, so only a root run has another user to reach the data directory.
describe.runIf(process.getuid?.() === 0)("run as root", () => {
  it("changes no permission above the data directory unless asked, and says which directory is closed", async () => {
    const closed = path.join(tmp, "closed");
    await mkdir(closed, { mode: 0o700 });
    await chmod(closed, 0o700); // the umask may have narrowed it further; exactly 0700
    const inside = path.join(closed, "cluster");
    await expect(startEmbeddedPostgres({ dataDir: inside, durable: false })).rejects.toThrow(
      new RegExp(`cannot enter ${closed}.*EMBEDDED_PG_GRANT_ACCESS=1`, "s"),
    );
    expect((await stat(closed)).mode & 0o777).toBe(0o700);

    const server = await startEmbeddedPostgres({ dataDir: inside, durable: false, grantAccess: true });
    running.push(server);
    expect((await stat(closed)).mode & 0o777).toBe(0o701);
    expect(await sql<{ one: number }>(server.adminUrl, "SELECT 1 AS one")).toEqual([{ one: 1 }]);
  });
});
