/** What the global setup started, handed to the workers through one environment variable. */
export interface E2eEnvironment {
  /** Base URLs of the two long-lived Tally instances, both on 127.0.0.1 so one cookie serves both. */
  serverA: string;
  serverB: string;
  databaseUrl: string;
  redisUrl: string;
  /** The run's temp directory; tests that start their own instance put its DATA_DIR here. */
  tmpDir: string;
}

export const ENVIRONMENT_VARIABLE = "TALLY_E2E_ENVIRONMENT";

export function readEnvironment(): E2eEnvironment {
  const raw = process.env[ENVIRONMENT_VARIABLE];
  if (raw === undefined) {
    throw new Error(`${ENVIRONMENT_VARIABLE} is unset: run the suite through playwright.config.ts (its globalSetup).`);
  }
  return JSON.parse(raw) as E2eEnvironment;
}
