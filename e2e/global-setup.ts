import { spawnSync } from "node:child_process";
import { chown, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ENVIRONMENT_VARIABLE, type E2eEnvironment } from "./support/environment.ts";
import { instanceDataDir, startTallyServer, type TallyServer } from "./support/tally-server.ts";

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * One throw-away PostgreSQL, one redis-server and two Tally instances (A and B) for the whole run; never the
 * machine's own services. Returns the teardown, which Playwright runs after the last test, pass or fail.
 */
export default async function globalSetup(): Promise<() => Promise<void>> {
  // The helpers' logger reads LOG_LEVEL when first imported; their info lines would bury the test report.
  process.env.LOG_LEVEL ??= "warn";
  const [{ postgresOsUser, startEmbeddedPostgres }, { startRedisServer }, { freePort }, { migrate }] =
    await Promise.all([
      import("../server/embedded/postgres.ts"),
      import("../server/embedded/redis.ts"),
      import("../server/embedded/ports.ts"),
      import("../server/db/migrate.ts"),
    ]);

  ensureProductionBuild();

  const tmpDir = await mkdtemp(path.join(os.tmpdir(), "tally-e2e-"));
  // mkdtemp makes a 0700 directory; as root, PostgreSQL runs as the postgres user and must reach its data in it.
  const pgUser = await postgresOsUser();
  if (pgUser !== undefined) await chown(tmpDir, pgUser.uid, pgUser.gid);

  const servers: TallyServer[] = [];
  const services: (() => Promise<void>)[] = [];
  const teardown = async (): Promise<void> => {
    // Tally first: it holds connections to both stores and would log errors while they go away.
    await Promise.allSettled(servers.map((server) => server.stop()));
    await Promise.allSettled(services.map((stop) => stop()));
    await rm(tmpDir, { recursive: true, force: true });
  };

  try {
    // Settled, not raced: when one fails, the other must have finished starting before teardown can stop it.
    const [pgStarted, redisStarted] = await Promise.allSettled([
      startEmbeddedPostgres({ dataDir: path.join(tmpDir, "pg"), durable: false }),
      startRedisServer({ dir: path.join(tmpDir, "redis") }),
    ]);
    for (const started of [pgStarted, redisStarted])
      if (started.status === "fulfilled") services.push(started.value.stop);
    if (pgStarted.status === "rejected") throw pgStarted.reason;
    if (redisStarted.status === "rejected") throw redisStarted.reason;
    const pg = pgStarted.value;
    const redis = redisStarted.value;
    // Instances migrate at start too, but concurrently they would queue on the migration lock one by one.
    await migrate(pg.url);
    const start = async (name: string): Promise<TallyServer> =>
      startTallyServer({
        name,
        port: await freePort(),
        databaseUrl: pg.url,
        redisUrl: redis.url,
        dataDir: instanceDataDir(tmpDir, name),
      });
    const started = await Promise.allSettled([start("A"), start("B")]);
    for (const result of started) if (result.status === "fulfilled") servers.push(result.value);
    const [a, b] = servers;
    if (a === undefined || b === undefined) {
      throw started.find((result) => result.status === "rejected")?.reason ?? new Error("a Tally instance failed");
    }

    const environment: E2eEnvironment = {
      serverA: a.url,
      serverB: b.url,
      databaseUrl: pg.url,
      redisUrl: redis.url,
      tmpDir,
    };
    // Workers are forked after global setup and inherit the runner's environment.
    process.env[ENVIRONMENT_VARIABLE] = JSON.stringify(environment);
  } catch (err) {
    await teardown();
    throw err;
  }
  return teardown;
}

// `npx playwright test` skips the npm script's build step; without it each instance would build on its own when
// .next is missing, two at once overwriting each other's output, and a stale build would test old UI code.
function ensureProductionBuild(): void {
  const build = spawnSync(process.execPath, ["scripts/ensure-build.mjs"], { cwd: root, stdio: "inherit" });
  if (build.status !== 0) throw new Error(`scripts/ensure-build.mjs failed (exit ${build.status ?? build.signal})`);
}
