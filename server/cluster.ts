import { join } from "node:path";
import { parseArgs } from "node:util";
import { seedDemo } from "../prisma/seed.ts";
import { loadEnv, projectRoot as root } from "./env.ts";
import { createDb } from "./db/prisma.ts";
import { startBalancer } from "./embedded/haproxy.ts";
import { startServices } from "./embedded/services.ts";
import { TallyProcess } from "./embedded/tally-process.ts";
import { logger, logStartFailure } from "./log.ts";
import { describeRedisTarget } from "./redis/client.ts";
import { buildUiIfMissing } from "./ui-build.ts";

const USAGE = "usage: npm run start:cluster -- [--instances N] [--no-balancer] [--redis-cluster]";

function options(): { instances: number; balancer: boolean; redisCluster: boolean } {
  const { values } = parseArgs({
    options: {
      instances: { type: "string", default: "2" },
      "no-balancer": { type: "boolean", default: false },
      "redis-cluster": { type: "boolean", default: false },
    },
  });
  const instances = Number(values.instances);
  if (!Number.isInteger(instances) || instances < 1 || instances > 16)
    throw new Error(`--instances must be a whole number from 1 to 16, not '${values.instances}'. ${USAGE}`);
  return { instances, balancer: !values["no-balancer"], redisCluster: values["redis-cluster"] };
}

/**
 * `npm run start:cluster -- --instances N`: N Tally instances sharing one Redis and one database behind HAProxy
 * (from the OS packages) on one public port, PORT (default 3000); the instances listen on PORT+1 … PORT+N.
 * `--no-balancer` leaves HAProxy out: the instances then listen on PORT … PORT+N-1. `--redis-cluster` starts a local
 * Redis Cluster (3 masters + 3 replicas on free ports, in the data directory) for them instead of one redis-server.
 * Embedded services start once, here. Ctrl-C stops everything this started.
 */
async function main(): Promise<void> {
  const { instances: count, balancer, redisCluster } = options();
  const env = loadEnv();
  const last = (balancer ? env.PORT + 1 : env.PORT) + count - 1;
  if (env.PORT === 0 || last > 65535) {
    throw new Error(
      `PORT=${env.PORT} leaves no room for ${count} instance${count === 1 ? "" : "s"}: ` +
        (balancer ? "HAProxy listens on PORT and the instances on PORT+1…PORT+N" : "the instances listen on PORT…") +
        `, all at most 65535 (and PORT is not 0 here). ${USAGE}`,
    );
  }
  process.env.NEXT_TELEMETRY_DISABLED ??= "1";
  const cleanups: (() => Promise<void>)[] = [];
  const instances: TallyProcess[] = [];
  // From the start: a stop asked for while starting stops what has started (the embedded services have a process
  // group of their own and would outlive the signal's default action).
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await Promise.allSettled(instances.map((instance) => instance.stop()));
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    process.exit(code);
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));

  const dev = env.NODE_ENV === "development";
  // Not under `tsx watch`: the services can have a process group of their own.
  const services = await startServices(env, { root, log: logger, redisCluster, ownProcessGroup: true });
  cleanups.push(services.stop);
  const { databaseUrl, redis } = services;
  const db = createDb(databaseUrl);
  if (env.SEED_DEMO === "1" && (await seedDemo(db))) logger.info("seeded the demo users alice, bob, carol and dave");
  await db.$disconnect();

  // Build once here so the two instances do not both try to.
  if (!dev) await buildUiIfMissing(root);

  const first = balancer ? env.PORT + 1 : env.PORT;
  const ports = Array.from({ length: count }, (_, i) => first + i);
  logger.info(
    `starting ${count} instance${count === 1 ? "" : "s"} on port${count === 1 ? "" : "s"} ${ports.join(", ")}`,
  );
  try {
    for (const port of ports) {
      const instance = await TallyProcess.start({
        name: String(port),
        port,
        host: env.HOST,
        databaseUrl,
        redis,
        dataDir: services.dataDir,
        output: "inherit",
        readyTimeoutMs: 120_000,
        // Seeded above, once; each instance shows the demo accounts on its sign-in page as `npm start` does.
        env: { SEED_DEMO: env.SEED_DEMO === "1" ? "1" : "0" },
      });
      instances.push(instance);
      void instance.exited().then(() => {
        if (stopping) return;
        logger.error({ port }, "an instance stopped; stopping the cluster");
        void stop(1);
      });
    }
    if (balancer) {
      const lb = await startBalancer({
        host: env.HOST,
        port: env.PORT,
        instances: ports.map((port, i) => ({ name: `i${i}`, port })),
        dir: join(services.dataDir, "haproxy"),
        // Ctrl-C reaches the instances and this launcher: browsers keep the balancer while the instances drain.
        ownProcessGroup: true,
      });
      cleanups.push(lb.stop);
      logger.info(
        `the cluster is ready: open ${lb.url} (HAProxy in front of ports ${ports.join(", ")}; Redis: ` +
          `${describeRedisTarget(redis)})`,
      );
    } else {
      logger.info(`the cluster is ready: open ${ports.map((port) => `http://localhost:${port}`).join(" or ")}`);
    }
  } catch (err) {
    logger.fatal({ err }, err instanceof Error ? err.message : "an instance did not start");
    await stop(1);
  }
}

main().catch((err: unknown) => {
  logStartFailure(err, "failed to start the cluster");
  process.exit(1);
});
