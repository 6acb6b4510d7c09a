import path from "node:path";
import { TallyProcess, type TallyProcessOptions } from "../../server/embedded/tally-process.ts";
import { LIFTED_LIMITS } from "../../server/limits/limits.ts";

export type TallyServer = TallyProcess;

/**
 * A Tally server as production runs it (NODE_ENV=production, with the UI), ready once /api/health answers 200.
 * At LOG_LEVEL=warn a healthy server prints nothing, so whatever it prints appears beside the test.
 */
export function startTallyServer(
  opts: Pick<TallyProcessOptions, "name" | "port" | "databaseUrl" | "redis" | "dataDir" | "env">,
): Promise<TallyServer> {
  return TallyProcess.start({
    ...opts,
    output: "prefix",
    // Next.js prepares itself before the server listens; on two busy cores that takes a while.
    readyTimeoutMs: 120_000,
    stopTimeoutMs: 20_000,
    env: {
      NODE_ENV: "production",
      LOG_LEVEL: "warn",
      // Every test signs up its users from 127.0.0.1; limits have tests of their own (server/security.int.test.ts).
      RATE_LIMITS: LIFTED_LIMITS,
      ...opts.env,
    },
  });
}

/** Where the global setup keeps per-instance data directories. */
export function instanceDataDir(tmpDir: string, name: string): string {
  return path.join(tmpDir, `tally-${name}`);
}
