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
});

export type Env = z.infer<typeof schema>;

/** Resolved settings the app runs with (after the boot step filled in embedded defaults). */
export interface AppConfig {
  sessionSecret: string;
  sendRatePerSecond: number;
  sendRateBurst: number;
  /** Set the session cookie with the Secure flag (behind HTTPS). */
  secureCookies: boolean;
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

/** Loads `<root>/.env` when present; variables already set in the environment win. */
export function loadDotEnv(root: string): void {
  const file = join(root, ".env");
  if (existsSync(file)) process.loadEnvFile(file);
}
