import { join } from "node:path";
import type { TestProject } from "vitest/node";
import type { RedisTarget } from "../redis/client.ts";
import { startThrowawayServices } from "../embedded/services.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** Superuser URL of the run's PostgreSQL cluster; create a database per file with createTestDatabase(). */
    pgAdminUrl: string;
    /** The run's own redis-server, never the machine's; test files run one at a time and may flush it. */
    redisUrl: string;
    /**
     * The Redis the app under test uses: the run's redis-server (project "int"), or the run's own local Redis
     * Cluster of 3 masters and 3 replicas (project "int-cluster").
     */
    redisTarget: RedisTarget;
  }
}

/**
 * One PostgreSQL cluster and one redis-server for the whole integration run, in a fresh temp directory.
 * REDIS_URL and DATABASE_URL are deliberately ignored: tests flush and drop, and must never reach a real server.
 */
export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return startTestServices(project, { cluster: false });
}

/** The same, plus a local Redis Cluster that the app under test uses (global-setup-cluster.ts). */
export async function startTestServices(
  project: TestProject,
  opts: { cluster: boolean },
): Promise<() => Promise<void>> {
  const services = await startThrowawayServices({ name: "test", database: "postgres" });
  project.provide("pgAdminUrl", services.postgres.adminUrl);
  project.provide("redisUrl", services.redis.url);
  if (!opts.cluster) {
    project.provide("redisTarget", { url: services.redis.url });
    return services.stop;
  }
  try {
    const { startRedisCluster } = await import("../embedded/redis-cluster.ts");
    const cluster = await startRedisCluster({ dir: join(services.tmpDir, "cluster"), nodeTimeoutMs: 1000 });
    project.provide("redisTarget", { clusterNodes: cluster.nodes });
    return async () => {
      await cluster.stop();
      await services.stop();
    };
  } catch (err) {
    await services.stop();
    throw err;
  }
}
