import { mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { migrate } from "../db/migrate.ts";
import type { Logger } from "../log.ts";
import { redisTargetOf, type RedisTarget } from "../redis/client.ts";

/**
 * Where an instance records the database and Redis it uses (mode 600: the database URL holds its password), for
 * `npm run reconcile` and the bench to find. Removed by the stop of the embedded services it names.
 */
export function servicesFile(dataDir: string): string {
  return join(dataDir, "services.json");
}

export interface Services {
  /** The data directory, absolute and created. */
  dataDir: string;
  databaseUrl: string;
  redis: RedisTarget;
  /** Stops what was started here (nothing for a service given by URL). Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * PostgreSQL and Redis for `npm start` and `npm run start:cluster`: each one given by URL is used as it is;
 * each one missing is started embedded under `dataDir` (the embedded modules are loaded only then, so a
 * deployment with both URLs never loads them). Migrations are applied either way. Each step is logged before it
 * runs.
 */
export async function startServices(
  /** The variables of server/env.ts that say where the services are. */
  env: {
    DATA_DIR: string;
    DATABASE_URL?: string | undefined;
    REDIS_URL?: string | undefined;
    REDIS_CLUSTER_NODES?: string[] | undefined;
    REDIS_CLUSTER_PASSWORD?: string | undefined;
    REDIS_CLUSTER_USERNAME?: string | undefined;
    REDIS_CLUSTER_TLS?: "0" | "1" | undefined;
    REDIS_CLUSTER_TLS_CA?: string | undefined;
    EMBEDDED_PG_GRANT_ACCESS: "0" | "1";
  },
  options: {
    root: string;
    log: Logger;
    /**
     * With no Redis configured, start a local Redis Cluster (3 masters + 3 replicas on free ports, under
     * `<dataDir>/redis-cluster`) instead of one redis-server (`npm run start:cluster -- --redis-cluster`).
     */
    redisCluster?: boolean;
    /**
     * Embedded services in a process group of their own, so that a terminal's Ctrl-C reaches only Tally, which stops
     * them once it has drained. Not under `tsx watch` (`npm run dev`): it kills the server outright after 5 s or at a
     * second Ctrl-C, which would leave them running.
     */
    ownProcessGroup?: boolean;
  },
): Promise<Services> {
  const { log } = options;
  if (options.redisCluster && env.REDIS_URL)
    throw new Error("--redis-cluster starts a local Redis Cluster: unset REDIS_URL (or set REDIS_CLUSTER_NODES)");
  const dataDir = resolve(options.root, env.DATA_DIR);
  mkdirSync(dataDir, { recursive: true });
  const opts = {
    dataDir,
    databaseUrl: env.DATABASE_URL,
    redis: redisTargetOf(env),
    grantAccess: env.EMBEDDED_PG_GRANT_ACCESS === "1",
  };
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    const embedded = stops.length > 0;
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
    // It names services that are gone now: `npm run reconcile` would try them and fail on a refused connection,
    // where without it it says to start Tally or set the URLs.
    if (embedded) rmSync(servicesFile(dataDir), { force: true });
  };
  try {
    let databaseUrl = opts.databaseUrl;
    if (!databaseUrl) {
      const dir = join(opts.dataDir, "postgres");
      log.info({ dir }, "DATABASE_URL is unset: starting the embedded PostgreSQL (the first start initialises it)");
      const { startEmbeddedPostgres } = await import("./postgres.ts");
      const pg = await startEmbeddedPostgres({
        dataDir: dir,
        grantAccess: opts.grantAccess ?? false,
        ownProcessGroup: options.ownProcessGroup ?? false,
      });
      stops.push(pg.stop);
      databaseUrl = pg.url;
    }
    let redis = opts.redis;
    if (redis && options.redisCluster)
      log.info("REDIS_CLUSTER_NODES is set: --redis-cluster starts nothing, the instances use that cluster");
    if (!redis && options.redisCluster) {
      // Nothing in it outlives a stop (no persistence), and old nodes.conf files would name ports taken by now.
      const dir = join(opts.dataDir, "redis-cluster");
      rmSync(dir, { recursive: true, force: true });
      log.info({ dir }, "starting a local Redis Cluster: 3 masters and 3 replicas on free ports");
      const { startRedisCluster } = await import("./redis-cluster.ts");
      const cluster = await startRedisCluster({ dir, ownProcessGroup: options.ownProcessGroup ?? false });
      stops.push(cluster.stop);
      redis = { clusterNodes: cluster.nodes };
    }
    if (!redis) {
      log.info("REDIS_URL and REDIS_CLUSTER_NODES are unset: starting a private redis-server");
      const { startRedisServer } = await import("./redis.ts");
      const server = await startRedisServer({
        dir: join(opts.dataDir, "redis"),
        ownProcessGroup: options.ownProcessGroup ?? false,
      });
      stops.push(server.stop);
      redis = { url: server.url };
    }
    log.info("applying database migrations");
    const { applied } = await migrate(databaseUrl).catch((err: unknown) => {
      // The driver's error names an address and nothing else; say whose setting it came from.
      if (env.DATABASE_URL === undefined) throw err;
      const { host, pathname } = new URL(databaseUrl);
      const reason = err instanceof Error ? err.message : String(err);
      throw new Error(`cannot use the database of DATABASE_URL (${host}${pathname}): ${reason}`, { cause: err });
    });
    if (applied.length > 0) log.info({ applied }, "applied database migrations");
    return { dataDir, databaseUrl, redis, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

export interface ThrowawayServices {
  /** The temp directory holding both data directories; removed by stop(). */
  tmpDir: string;
  postgres: import("./postgres.ts").EmbeddedPostgres;
  redis: import("./redis.ts").RedisServer;
  /** Stops both and removes the directory. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * A PostgreSQL and a redis-server of their own, in a fresh temp directory, for the test setups, the benchmark
 * and the soak: never the machine's own servers, whatever DATABASE_URL and REDIS_URL say.
 */
export async function startThrowawayServices(opts: {
  /** Names the temp directory (tally-<name>-…). */
  name: string;
  /** false (the default): no fsync, for speed; the data is thrown away anyway. */
  durable?: boolean;
  /** The database to create; "postgres" creates none. Defaults to "tally". */
  database?: string;
  /** Apply the migrations to `database`. */
  migrate?: boolean;
  /** More PostgreSQL settings (`-c name=value`). */
  settings?: Record<string, string>;
}): Promise<ThrowawayServices> {
  const [{ mkdtemp, chown, rm }, os, { postgresOsUser, startEmbeddedPostgres }, { startRedisServer }] =
    await Promise.all([import("node:fs/promises"), import("node:os"), import("./postgres.ts"), import("./redis.ts")]);
  const tmpDir = await mkdtemp(join(os.tmpdir(), `tally-${opts.name}-`));
  // mkdtemp makes a 0700 directory; as root, PostgreSQL runs as another user and must reach its data in it.
  const pgUser = await postgresOsUser();
  if (pgUser !== undefined) await chown(tmpDir, pgUser.uid, pgUser.gid);

  // Settled, not raced: when one fails, the other must have finished starting before it can be stopped.
  const [pg, redis] = await Promise.allSettled([
    startEmbeddedPostgres({
      dataDir: join(tmpDir, "pg"),
      durable: opts.durable ?? false,
      ...(opts.database ? { database: opts.database } : {}),
      ...(opts.settings ? { settings: opts.settings } : {}),
    }),
    startRedisServer({ dir: join(tmpDir, "redis") }),
  ]);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await Promise.allSettled([pg, redis].map((s) => (s.status === "fulfilled" ? s.value.stop() : undefined)));
      await rm(tmpDir, { recursive: true, force: true });
    })());
  try {
    if (pg.status === "rejected") throw pg.reason;
    if (redis.status === "rejected") throw redis.reason;
    if (opts.migrate) await migrate(pg.value.url);
    return { tmpDir, postgres: pg.value, redis: redis.value, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
