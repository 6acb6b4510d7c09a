import { chown, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { postgresOsUser, startEmbeddedPostgres, type EmbeddedPostgres } from "../embedded/postgres.ts";
import { startRedisServer, type RedisServer } from "../embedded/redis.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** Superuser URL of the run's PostgreSQL cluster; create a database per file with createTestDatabase(). */
    pgAdminUrl: string;
    /** The run's own redis-server, never the machine's; test files run one at a time and may flush it. */
    redisUrl: string;
  }
}

/**
 * One PostgreSQL cluster and one redis-server for the whole integration run, in a fresh temp directory. REDIS_URL
 * and DATABASE_URL are deliberately ignored: tests flush and drop, and must never reach a real server.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "tally-test-"));
  // mkdtemp makes a 0700 directory; as root, PostgreSQL runs as the postgres user and must be able to write in it.
  const pgUser = await postgresOsUser();
  if (pgUser !== undefined) await chown(tmp, pgUser.uid, pgUser.gid);

  let postgres: EmbeddedPostgres | undefined;
  let redis: RedisServer | undefined;
  const teardown = async (): Promise<void> => {
    await Promise.allSettled([postgres?.stop(), redis?.stop()]);
    await rm(tmp, { recursive: true, force: true });
  };

  const [pgStarted, redisStarted] = await Promise.allSettled([
    startEmbeddedPostgres({ dataDir: path.join(tmp, "pg"), database: "postgres", durable: false }),
    startRedisServer({ dir: path.join(tmp, "redis") }),
  ]);
  if (pgStarted.status === "fulfilled") postgres = pgStarted.value;
  if (redisStarted.status === "fulfilled") redis = redisStarted.value;
  if (postgres === undefined || redis === undefined) {
    await teardown();
    throw pgStarted.status === "rejected" ? pgStarted.reason : (redisStarted as PromiseRejectedResult).reason;
  }
  project.provide("pgAdminUrl", postgres.adminUrl);
  project.provide("redisUrl", redis.url);
  return teardown;
}
