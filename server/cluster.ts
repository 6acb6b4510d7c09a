import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { seedDemo } from "../prisma/seed.ts";
import { loadEnv, projectRoot as root } from "./env.ts";
import { createDb } from "./db/prisma.ts";
import { startServices } from "./embedded/services.ts";
import { TallyProcess } from "./embedded/tally-process.ts";
import { logger } from "./log.ts";

/**
 * `npm run start:cluster`: two Tally instances (PORT and PORT+1, default 3000 and 3001) sharing one Redis and
 * one database, the way a deployment behind a load balancer runs. Embedded services start once, here.
 */
async function main(): Promise<void> {
  const env = loadEnv();
  process.env.NEXT_TELEMETRY_DISABLED ??= "1";
  const cleanups: (() => Promise<void>)[] = [];
  const instances: TallyProcess[] = [];

  const services = await startServices(env, { root, log: logger });
  cleanups.push(services.stop);
  const { databaseUrl, redisUrl } = services;
  const db = createDb(databaseUrl);
  if (env.SEED_DEMO === "1" && (await seedDemo(db))) logger.info("seeded the demo users alice, bob, carol and dave");
  await db.$disconnect();

  // Build once here so the two instances do not both try to.
  if (env.NODE_ENV !== "development" && !existsSync(join(root, ".next", "BUILD_ID"))) {
    logger.info("no production build yet: building the UI once (about 25 s on two cores, only on the first run)");
    const build = spawnSync("npx", ["--no-install", "next", "build"], { cwd: root, stdio: "inherit" });
    if (build.status !== 0) throw new Error("`next build` failed");
  }

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

  const ports = [env.PORT, env.PORT + 1];
  logger.info(`starting two instances on ports ${ports.join(" and ")}`);
  try {
    for (const port of ports) {
      const instance = await TallyProcess.start({
        name: String(port),
        port,
        host: env.HOST,
        databaseUrl,
        redisUrl,
        dataDir: services.dataDir,
        output: "inherit",
        readyTimeoutMs: 120_000,
      });
      instances.push(instance);
      void instance.exited().then(() => {
        if (stopping) return;
        logger.error({ port }, "an instance stopped; stopping the cluster");
        void stop(1);
      });
    }
  } catch (err) {
    logger.fatal({ err }, err instanceof Error ? err.message : "an instance did not start");
    await stop(1);
  }
  logger.info(`the cluster is ready: open ${ports.map((port) => `http://localhost:${port}`).join(" or ")}`);
}

main().catch((err: unknown) => {
  logger.fatal({ err }, err instanceof Error ? err.message : "failed to start the cluster");
  process.exit(1);
});
