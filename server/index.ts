import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import next from "next";
import { DEMO_PASSWORD, demoUsers } from "../prisma/seed-data.ts";
import { seedDemo } from "../prisma/seed.ts";
import { createApp } from "./app.ts";
import type { AppModule } from "./modules.ts";
import { appSecurityConfig, loadEnv, unreadTtlMs } from "./env.ts";
import { createDb } from "./db/prisma.ts";
import { servicesFile, startServices } from "./embedded/services.ts";
import { ConfigError } from "./errors.ts";
import { consoleThroughLogger, logger, logsJson, logStartFailure } from "./log.ts";
import { withTimeout } from "./limits/deadline.ts";
import { createAdapterClients, createRedis, isClusterTarget, redisUrlProblem } from "./redis/client.ts";
import { SETTINGS_KEY } from "./redis/keys.ts";
import { buildUiIfMissing } from "./ui-build.ts";

/** How long each step of a shutdown may wait (closing the app; Redis' and the database's connections). */
const STOP_STEP_MS = 10_000;
/** How soon the same signal again is the first one passed on (by npm, by tsx), not a second request. */
const SIGNAL_ECHO_MS = 1000;

const root = fileURLToPath(new URL("..", import.meta.url));

/** Embedded services this process started, stopped on exit, also when start-up fails half-way. */
const cleanups: (() => Promise<void>)[] = [];

async function prepareNext(dev: boolean, port: number) {
  if (!dev) await buildUiIfMissing(root);
  logger.info(dev ? "starting the UI in development mode (pages compile on first visit)" : "starting the UI");
  const nextApp = next({ dev, dir: root, hostname: "localhost", port });
  await nextApp.prepare();
  return nextApp;
}

async function main(): Promise<void> {
  const env = loadEnv();
  // Next.js prints with console; with JSON logs its lines are JSON too.
  if (logsJson()) consoleThroughLogger("next");
  // The demo sends nothing anywhere: Next's anonymous telemetry stays off unless the operator sets it.
  process.env.NEXT_TELEMETRY_DISABLED ??= "1";
  const dev = env.NODE_ENV === "development";

  // A stop asked for while starting stops what has started: the embedded services have a process group of their own
  // and would outlive the signal's default action (this process killed, no "exit" handlers run).
  let stoppingEarly = false;
  const stopWhileStarting = (signal: NodeJS.Signals) => {
    if (stoppingEarly) return;
    stoppingEarly = true;
    logger.info({ signal }, "stopping before the start finished");
    void (async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
      process.exit(0);
    })();
  };
  process.on("SIGINT", stopWhileStarting);
  process.on("SIGTERM", stopWhileStarting);

  // `npm run dev` runs under `tsx watch`, which kills the server outright after 5 s or at a second Ctrl-C.
  const services = await startServices(env, { root, log: logger, ownProcessGroup: !dev });
  cleanups.push(services.stop);
  const { dataDir, databaseUrl, redis: redisTarget } = services;
  const db = createDb(databaseUrl);
  if (env.SEED_DEMO === "1" && (await seedDemo(db))) logger.info("seeded the demo users alice, bob, carol and dave");

  // SERVE_UI=0 runs the API and Socket.IO only (tests and soak runs start many instances).
  const nextApp = env.SERVE_UI === "1" ? await prepareNext(dev, env.PORT) : null;
  const handle = nextApp?.getRequestHandler();
  writeFileSync(servicesFile(dataDir), JSON.stringify({ databaseUrl, redis: redisTarget }, null, 2), { mode: 0o600 });

  // LAB=0: the lab's code is not even loaded.
  const modules: AppModule[] = env.LAB === "1" ? [(await import("./lab/module.ts")).labModule] : [];

  if (!isClusterTarget(redisTarget)) {
    const problem = await redisUrlProblem(redisTarget.url);
    if (problem) throw new ConfigError(problem);
  }
  const redis = createRedis(redisTarget);
  // For `npm run reconcile`, which must count with the same expiry (not awaited: Redis may be away at start).
  redis
    .hset(SETTINGS_KEY, "unreadTtlMs", String(unreadTtlMs(env)))
    .catch((err: unknown) => logger.warn({ err }, "recording the unread expiry for reconcile failed"));
  const adapterClients = createAdapterClients(redisTarget);
  const httpServer = createServer();
  const app = createApp({
    httpServer,
    redis,
    db,
    adapterClients,
    modules,
    dev,
    ...(handle ? { fallback: (req, res) => handle(req, res) } : {}),
    config: {
      ...appSecurityConfig(env),
      ...(env.SEED_DEMO === "1" ? { demo: { accounts: demoUsers, password: DEMO_PASSWORD } } : {}),
      outboxRelayMs: env.OUTBOX_RELAY_MS,
      reconcileIntervalMs: env.RECONCILE_INTERVAL_S * 1000,
      unreadTtlMs: unreadTtlMs(env),
      ...(env.TALLY_FAULT ? { fault: env.TALLY_FAULT } : {}),
    },
  });
  if (env.TALLY_FAULT)
    logger.warn({ fault: env.TALLY_FAULT }, "fault injection is ON (TALLY_FAULT); never in a deployment");
  if (dev && nextApp) {
    const upgrade = nextApp.getUpgradeHandler();
    httpServer.on("upgrade", (req, socket, head) => {
      if (!req.url?.startsWith("/socket.io/")) void upgrade(req, socket, head);
    });
  }

  await new Promise<void>((resolveListen, reject) => {
    httpServer.once("error", reject);
    httpServer.listen(env.PORT, env.HOST, resolveListen);
  });
  const address = httpServer.address();
  const port = typeof address === "object" && address ? address.port : env.PORT;
  const demo = env.SEED_DEMO === "1" ? ` and sign in as alice, bob, carol or dave (password ${DEMO_PASSWORD})` : "";
  logger.info({ port, dev }, `Tally is running: open http://localhost:${port}${demo}`);

  let stopping: { signal: string; at: number } | null = null; // at: performance.now(), immune to clock steps
  const stop = async (signal: string) => {
    // The same signal again, SIGNAL_ECHO_MS or more later, means "now". Sooner it is the same request heard twice: a
    // signal to the whole process group (a terminal's Ctrl-C, a supervisor's) also reaches npm (and tsx under `npm run
    // dev`), which pass it on; under tsx the server heard a group's SIGTERM twice 33 ms apart and stopped without
    // draining. Another signal is the same request too: a Ctrl-C reaches `start:cluster`'s instances (SIGINT), and
    // then the launcher stops them (SIGTERM).
    if (stopping !== null) {
      if (stopping.signal !== signal || performance.now() - stopping.at < SIGNAL_ECHO_MS) return;
      logger.warn({ signal }, "stopping now, without waiting for the rest");
      process.exit(1);
    }
    stopping = { signal, at: performance.now() };
    logger.info({ signal }, "shutting down");
    // Nothing here may wait for Redis or the database for good: ioredis queues QUIT (and the adapter's UNSUBSCRIBE)
    // until it reconnects, so with Redis away the process stayed up after SIGTERM (an operator's walkthrough).
    await withTimeout(app.close(), STOP_STEP_MS).catch((err: unknown) =>
      logger.warn({ err }, "closing the app timed out"),
    );
    httpServer.closeAllConnections();
    const quit = (client: typeof redis) => withTimeout(client.quit(), STOP_STEP_MS).catch(() => client.disconnect());
    await Promise.allSettled([
      quit(redis),
      quit(adapterClients.pub),
      quit(adapterClients.sub),
      withTimeout(db.$disconnect(), STOP_STEP_MS),
    ]);
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
    logger.info("stopped");
    process.exit(0);
  };
  if (stoppingEarly) return;
  process.off("SIGINT", stopWhileStarting);
  process.off("SIGTERM", stopWhileStarting);
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
}

main().catch(async (err: unknown) => {
  logStartFailure(err, "failed to start");
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  process.exit(1);
});
