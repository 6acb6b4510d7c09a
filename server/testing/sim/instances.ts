import path from "node:path";
import { freePort } from "../../embedded/ports.ts";
import { TallyProcess } from "../../embedded/tally-process.ts";
import { LIFTED_LIMITS } from "../../limits/limits.ts";
import type { RedisTarget } from "../../redis/client.ts";

export type Instance = TallyProcess;

/**
 * A real Tally server process (API and Socket.IO only), so that faults can kill it with SIGKILL exactly as a
 * crash would; `restart()` keeps the port, so clients find it again, and takes a new DATABASE_URL for a fresh
 * round (`restart({ DATABASE_URL })`). `crashAfterCommit` makes it exit right after a send commits
 * (TALLY_FAULT=crash-after-commit). Its data directory is a folder of `dataRoot`, which the caller removes.
 */
export async function startInstance(options: {
  databaseUrl: string;
  redis: RedisTarget;
  dataRoot: string;
  crashAfterCommit?: boolean;
}): Promise<Instance> {
  const port = await freePort();
  return TallyProcess.start({
    name: `sim-${port}`,
    port,
    databaseUrl: options.databaseUrl,
    redis: options.redis,
    dataDir: path.join(options.dataRoot, `instance-${port}`),
    readyTimeoutMs: 30_000,
    env: {
      NODE_ENV: "production",
      SERVE_UI: "0",
      LOG_LEVEL: "warn",
      OUTBOX_RELAY_MS: "300",
      RECONCILE_INTERVAL_S: "0",
      RATE_LIMITS: LIFTED_LIMITS,
      TALLY_FAULT: options.crashAfterCommit ? "crash-after-commit" : undefined,
    },
  });
}
