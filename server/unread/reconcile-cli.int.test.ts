import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Redis } from "ioredis";
import { freePort } from "../embedded/ports.ts";
import { SETTINGS_KEY } from "../redis/keys.ts";
import { projectRoot } from "../env.ts";
import { createTestDatabase, type TestDatabase } from "../testing/db.ts";

// `npm run reconcile` as an operator's cron runs it: its exit status and what it prints say how the pass went.
let database: TestDatabase;
let dataDir: string;
beforeAll(async () => {
  database = await createTestDatabase(inject("pgAdminUrl"));
  dataDir = await mkdtemp(path.join(os.tmpdir(), "tally-reconcile-"));
});
afterAll(async () => {
  await database.drop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Runs the command with exactly these Tally variables (an empty DATA_DIR: no services.json to fall back on). */
function reconcile(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const { DATABASE_URL: _d, REDIS_URL: _r, REDIS_CLUSTER_NODES: _c, ...rest } = process.env;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "server/unread/reconcile-cli.ts"],
      { cwd: projectRoot, env: { ...rest, DATA_DIR: dataDir, LOG_FORMAT: "json", ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? -1) : 0, stdout, stderr }),
    );
  });
}

describe("npm run reconcile", () => {
  it("reports a pass and exits 0, naming the database and Redis it checked", async () => {
    const run = await reconcile({ DATABASE_URL: database.url, REDIS_URL: inject("redisUrl") });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^users checked: +0$/m);
    expect(run.stderr).toContain(`/${new URL(database.url).pathname.slice(1)} against ${inject("redisUrl")}`);
    // Without its password.
    const { username, password } = new URL(database.url);
    expect(run.stderr).not.toContain(`${username}:${password}@`);
  });

  it("exits 1 and says why when the database cannot be reached: a cron job sees a failure", async () => {
    const url = new URL(database.url);
    url.port = String(await freePort());
    const run = await reconcile({ DATABASE_URL: url.href, REDIS_URL: inject("redisUrl") });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^reconciliation failed: .*127\.0\.0\.1/m);
    expect(run.stdout).not.toContain("users checked");
  });

  it("counts with the instances' unread expiry, and refuses another one: exit 2, saying which", async () => {
    const redis = new Redis(inject("redisUrl"));
    try {
      await redis.hset(SETTINGS_KEY, "unreadTtlMs", String(86_400_000)); // the instances run with UNREAD_TTL_DAYS=1
      const other = await reconcile({
        DATABASE_URL: database.url,
        REDIS_URL: inject("redisUrl"),
        UNREAD_TTL_DAYS: "2",
      });
      expect(other.code).toBe(2);
      expect(other.stderr).toMatch(
        /UNREAD_TTL_DAYS gives an expiry of 172800000 ms, but the instances run with 86400000 ms/,
      );
      expect(other.stdout).not.toContain("users checked");
      const same = await reconcile({ DATABASE_URL: database.url, REDIS_URL: inject("redisUrl"), UNREAD_TTL_DAYS: "1" });
      expect(same.code, same.stderr).toBe(0);
      const unset = await reconcile({ DATABASE_URL: database.url, REDIS_URL: inject("redisUrl") });
      expect(unset.code, unset.stderr).toBe(0);
    } finally {
      await redis.del(SETTINGS_KEY);
      redis.disconnect();
    }
  });

  it("exits 2 with one of the two set: never a database of one deployment with a Redis of another", async () => {
    const run = await reconcile({ DATABASE_URL: database.url });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/DATABASE_URL is set but REDIS_URL/);
  });
});
