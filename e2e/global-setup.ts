import { spawnSync } from "node:child_process";
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
  const [{ startThrowawayServices }, { freePort }] = await Promise.all([
    import("../server/embedded/services.ts"),
    import("../server/embedded/ports.ts"),
  ]);

  ensureProductionBuild();

  // Migrated here: the instances migrate at start too, but concurrently they would queue on the lock one by one.
  const services = await startThrowawayServices({ name: "e2e", migrate: true });
  const { tmpDir, postgres: pg, redis } = services;
  const servers: TallyServer[] = [];
  const teardown = async (): Promise<void> => {
    // Tally first: it holds connections to both stores and would log errors while they go away.
    await Promise.allSettled(servers.map((server) => server.stop()));
    await services.stop();
  };

  try {
    const start = async (name: string): Promise<TallyServer> =>
      startTallyServer({
        name,
        port: await freePort(),
        databaseUrl: pg.url,
        redis: redis.url,
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
