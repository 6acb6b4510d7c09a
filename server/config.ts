import { existsSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";

const schema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("production"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default("0.0.0.0"),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  REDIS_URL: z.url({ protocol: /^rediss?$/ }).optional(),
  SESSION_SECRET: z.string().min(16, "must be at least 16 characters").optional(),
  DATA_DIR: z.string().min(1).default(".data"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  SEED_DEMO: z.enum(["0", "1"]).default("1"),
  SEND_RATE_PER_SECOND: z.coerce.number().positive().default(20),
  SEND_RATE_BURST: z.coerce.number().int().positive().default(60),
  SERVE_UI: z.enum(["0", "1"]).default("1"),
  OUTBOX_RELAY_MS: z.coerce.number().int().min(100).default(2000),
  RECONCILE_INTERVAL_S: z.coerce.number().int().min(0).default(600),
  /** Unread messages older than this many days stop counting (0: never; fractions allowed). */
  UNREAD_TTL_DAYS: z.coerce.number().min(0).max(36_500).default(0),
  /** Test-only fault injection; never set in a deployment. */
  TALLY_FAULT: z.enum(["crash-after-commit"]).optional(),
});

export type Env = z.infer<typeof schema>;

/** Resolved settings the app runs with (after the boot step filled in embedded defaults). */
export interface AppConfig {
  sessionSecret: string;
  sendRatePerSecond: number;
  sendRateBurst: number;
  /** Set the session cookie with the Secure flag (behind HTTPS). */
  secureCookies: boolean;
  /** How often the outbox relay replays counter updates a crash left behind (0: only at start). */
  outboxRelayMs?: number;
  /** How often reconciliation cross-checks every user against the database (0: never). */
  reconcileIntervalMs?: number;
  /** Unread messages older than this stop counting, evaluated by the scripts at read time (0 or unset: never). */
  unreadTtlMs?: number;
  /** Test-only: kill the process with SIGKILL right after a send commits, before Redis sees it. */
  fault?: "crash-after-commit";
}

/** Reads the environment once; fails with a message naming each bad variable. */
export function readEnv(env: NodeJS.ProcessEnv = process.env): Env {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join("\n")}\nSee README.md#configuration and .env.example.`);
  }
  return parsed.data;
}

/** UNREAD_TTL_DAYS in ms (0: off). */
export function unreadTtlMs(env: Env): number {
  return Math.round(env.UNREAD_TTL_DAYS * 86_400_000);
}

/** Loads `<root>/.env` when present; variables already set in the environment win. */
export function loadDotEnv(root: string): void {
  const file = join(root, ".env");
  if (existsSync(file)) process.loadEnvFile(file);
}
