import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { seedDemo } from "../prisma/seed.ts";
import { loadEnv } from "./env.ts";
import { createDb } from "./db/prisma.ts";
import { startServices } from "./embedded/services.ts";
import { logger } from "./log.ts";

/**
 * `npm run start:cluster`: two Tally instances (PORT and PORT+1, default 3000 and 3001) sharing one Redis and
 * one database, the way a deployment behind a load balancer runs. Embedded services start once, here.
 */
const root = fileURLToPath(new URL("..", import.meta.url));

async function main(): Promise<void> {
  const env = loadEnv();
  const cleanups: (() => Promise<void>)[] = [];
  const children: ChildProcess[] = [];

  const services = await startServices(env, { root, log: logger });
  cleanups.push(services.stop);
  const { databaseUrl, redisUrl } = services;
  const db = createDb(databaseUrl);
  if (env.SEED_DEMO === "1") await seedDemo(db);
  await db.$disconnect();

  // Build once here so the two instances do not both try to.
  if (env.NODE_ENV !== "development" && !existsSync(join(root, ".next", "BUILD_ID"))) {
    const build = spawnSync("npx", ["--no-install", "next", "build"], { cwd: root, stdio: "inherit" });
    if (build.status !== 0) throw new Error("`next build` failed");
  }

  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((done) =>
            child.exitCode !== null ? done() : (child.once("exit", () => done()), child.kill("SIGTERM")),
          ),
      ),
    );
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    process.exit(code);
  };

  for (const port of [env.PORT, env.PORT + 1]) {
    const child = spawn(process.execPath, ["--import", "tsx", join(root, "server", "index.ts")], {
      cwd: root,
      stdio: "inherit",
      env: { ...process.env, PORT: String(port), DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, SEED_DEMO: "0" },
    });
    child.once("exit", (code) => {
      if (!stopping) {
        logger.error({ port, code }, "an instance stopped; stopping the cluster");
        void stop(code ?? 1);
      }
    });
    children.push(child);
  }
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));
}

main().catch((err: unknown) => {
  logger.fatal({ err }, err instanceof Error ? err.message : "failed to start the cluster");
  process.exit(1);
});
