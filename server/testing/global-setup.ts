import type { TestProject } from "vitest/node";
import { startThrowawayServices } from "../embedded/services.ts";

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
  const services = await startThrowawayServices({ name: "test", database: "postgres" });
  project.provide("pgAdminUrl", services.postgres.adminUrl);
  project.provide("redisUrl", services.redis.url);
  return services.stop;
}
