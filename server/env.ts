import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { defaultLimits, type LimitName, type LimitRules } from "./limits/limits.ts";
import { logger, setLogFormat } from "./log.ts";
import { ConfigError } from "./errors.ts";
import type { CookiePolicy } from "./sessions/cookies.ts";
import { isProxyEntry, type TrustProxy } from "./http/origin.ts";

/*
 * The one environment module: every entry point (the server, the cluster script, the CLIs, prisma.config.ts)
 * calls loadEnv() first, which reads .env, validates every variable, and fails naming each bad one.
 */

/** The project root (where .env lives). */
export const projectRoot = fileURLToPath(new URL("..", import.meta.url));

/** A comma-separated list: trimmed, empty entries dropped. */
export const commaList = z.string().transform((text) =>
  text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean),
);

const UNIT_S = { s: 1, m: 60, h: 3600 } as const;
const LIMIT_OVERRIDE = /^([A-Za-z]+)=(\d+)\/(\d+)([smh])$/;
const limitOverride = z
  .string()
  .regex(LIMIT_OVERRIDE, "each entry is name=points/duration, e.g. send=60/3s")
  .transform((entry, ctx) => {
    const [, name, points, amount, unit] = LIMIT_OVERRIDE.exec(entry)!;
    if (!(name! in defaultLimits)) {
      ctx.addIssue({
        code: "custom",
        message: `unknown limit ${name}; known: ${Object.keys(defaultLimits).join(", ")}`,
      });
      return z.NEVER;
    }
    const rule = { points: Number(points), durationS: Number(amount) * UNIT_S[unit as keyof typeof UNIT_S] };
    if (rule.points < 1 || rule.durationS < 1) {
      ctx.addIssue({ code: "custom", message: `${entry}: points and duration must be at least 1` });
      return z.NEVER;
    }
    return [name as LimitName, rule] as const;
  });

/** `RATE_LIMITS`: comma-separated overrides such as `signUp=200/1h,sync=10/10s`. */
export const limitOverrides = commaList
  .pipe(z.array(limitOverride))
  .transform((entries) => Object.fromEntries(entries) as Partial<LimitRules>);

const flag = (fallback: "0" | "1") => z.enum(["0", "1"]).default(fallback);
/** A number written in digits; coercion alone reads "" and " " as 0 (`PORT=` gave a random port). */
const number = (rule: z.ZodNumber) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a number, in digits")
    .transform(Number)
    .pipe(rule);
const origin = z.url({ protocol: /^https?$/ }).transform((u) => new URL(u).origin);

const schema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("production"),
  PORT: number(z.number().int().min(0).max(65535)).default(3000),
  HOST: z.string().min(1).default("0.0.0.0"),
  DATABASE_URL: z
    .url({
      protocol: /^postgres(ql)?$/,
      error: "must be a PostgreSQL URL: postgresql://user:password@host:5432/database",
    })
    .optional(),
  REDIS_URL: z
    .url({ protocol: /^rediss?$/, error: "must be a Redis URL: redis://host:6379 (rediss:// for TLS)" })
    .optional(),
  /** A Redis Cluster instead of REDIS_URL: some of its nodes, `host:port,host:port` (the rest are discovered). */
  REDIS_CLUSTER_NODES: commaList
    .pipe(z.array(z.string().regex(/^[^\s:]+:\d{1,5}$/, "each node is host:port, e.g. 10.0.0.5:7000")).min(1))
    .optional(),
  /** The cluster's password (`requirepass`, or an ACL user's with REDIS_CLUSTER_USERNAME), sent to every node. */
  REDIS_CLUSTER_PASSWORD: z.string().min(1).optional(),
  REDIS_CLUSTER_USERNAME: z.string().min(1).optional(),
  /** Every node of the cluster over TLS (their `tls-port`s in REDIS_CLUSTER_NODES; `tls-cluster yes` on the nodes). */
  REDIS_CLUSTER_TLS: flag("0"),
  /** A PEM file of the CA that signed the nodes' certificates; without it, Node's trusted CAs. */
  REDIS_CLUSTER_TLS_CA: z.string().min(1).optional(),
  DATA_DIR: z.string().min(1).default(".data"),
  /** As root only: let the embedded PostgreSQL's user be granted search permission on DATA_DIR's parents. */
  EMBEDDED_PG_GRANT_ACCESS: flag("0"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** pretty: one readable line per event; json: JSON lines; auto: pretty on a terminal, JSON otherwise. */
  LOG_FORMAT: z.enum(["auto", "pretty", "json"]).default("auto"),
  SEED_DEMO: flag("1"),
  SERVE_UI: flag("1"),
  /** The consistency lab (its namespace and routes); 0 leaves it out of the server entirely. */
  LAB: flag("1"),
  /** Comma-separated origins allowed to call the API and open sockets; unset: the origin the server is reached at. */
  ALLOWED_ORIGINS: commaList
    .pipe(z.array(origin).min(1, "name at least one origin, e.g. https://chat.example.com"))
    .optional(),
  /** Bearer token a Prometheus scraper presents at /metrics; unset: /metrics answers loopback, unproxied peers only. */
  METRICS_TOKEN: z.string().min(16, "use at least 16 characters").optional(),
  /** 1 behind HTTPS: the session cookie gets Secure and responses send HSTS. */
  SECURE_COOKIES: flag("0"),
  COOKIE_SAMESITE: z.enum(["lax", "strict"]).default("lax"),
  /**
   * Behind a reverse proxy: the client address is the last X-Forwarded-For hop (for per-address limits). `1`
   * believes any peer (only a proxy must reach the instances); a list of addresses and CIDR ranges believes those.
   */
  TRUST_PROXY: z
    .string()
    .default("0")
    .refine(
      (v) => v === "0" || v === "1" || v.split(",").every((entry) => isProxyEntry(entry.trim())),
      "use 0, 1, or the proxies' addresses and CIDR ranges, comma-separated (10.0.0.5,10.1.0.0/16)",
    ),
  /** Overrides of the rate limits, e.g. `signUp=200/1h,send=60/3s` (see docs/protocol.md#limits). */
  RATE_LIMITS: limitOverrides.optional(),
  /** Connected sockets one user may hold across all instances. */
  MAX_SOCKETS_PER_USER: number(z.number().int().min(1)).default(20),
  OUTBOX_RELAY_MS: number(z.number().int().min(100)).default(2000),
  RECONCILE_INTERVAL_S: number(z.number().int().min(0)).default(600),
  /** Unread messages older than this many days stop counting (0: never; fractions allowed). */
  UNREAD_TTL_DAYS: number(z.number().min(0).max(36_500)).default(0),
  /** Test-only fault injection; never set in a deployment. */
  TALLY_FAULT: z.enum(["crash-after-commit"]).optional(),
});

export type Env = z.infer<typeof schema>;

/** Resolved settings the app runs with (after the boot step filled in embedded defaults). */
export interface AppConfig {
  cookies: CookiePolicy;
  /** Origins allowed to call state-changing routes and open sockets; unset: the request's own Host. */
  allowedOrigins?: string[];
  /** Take the client address from X-Forwarded-For (behind a reverse proxy): from any peer, or from these. */
  trustProxy: TrustProxy;
  limits: LimitRules;
  maxSocketsPerUser: number;
  /** Mount the consistency lab (namespace `/lab`). */
  lab: boolean;
  /** The demo accounts and their password to show on the sign-in page (SEED_DEMO=1), else none. */
  demo?: { accounts: string[]; password: string };
  /** How often the outbox relay replays counter updates a crash left behind (0: only at start). */
  outboxRelayMs?: number;
  /** How often reconciliation cross-checks every user against the database (0: never). */
  reconcileIntervalMs?: number;
  /** Unread messages older than this stop counting, evaluated by the scripts at read time (0 or unset: never). */
  unreadTtlMs?: number;
  /** Test-only: kill the process with SIGKILL right after a send commits, before Redis sees it. */
  fault?: "crash-after-commit";
  /** METRICS_TOKEN: the bearer token /metrics asks for (unset: loopback scrapers only). */
  metricsToken?: string;
}

/** Reads the environment once; fails with a message naming each bad variable. */
export function readEnv(env: NodeJS.ProcessEnv = process.env): Env {
  const parsed = schema
    .refine((e) => !(e.REDIS_URL && e.REDIS_CLUSTER_NODES), {
      path: ["REDIS_CLUSTER_NODES"],
      message: "set REDIS_URL (one Redis) or REDIS_CLUSTER_NODES (a Redis Cluster), not both",
    })
    .refine((e) => e.REDIS_CLUSTER_NODES || !(e.REDIS_CLUSTER_PASSWORD || e.REDIS_CLUSTER_USERNAME), {
      path: ["REDIS_CLUSTER_PASSWORD"],
      message: "is for REDIS_CLUSTER_NODES (a single Redis takes its password in REDIS_URL)",
    })
    .refine((e) => !(e.REDIS_CLUSTER_USERNAME && !e.REDIS_CLUSTER_PASSWORD), {
      path: ["REDIS_CLUSTER_USERNAME"],
      message: "needs REDIS_CLUSTER_PASSWORD",
    })
    .refine((e) => e.REDIS_CLUSTER_NODES || e.REDIS_CLUSTER_TLS === "0", {
      path: ["REDIS_CLUSTER_TLS"],
      message: "is for REDIS_CLUSTER_NODES (a single Redis takes TLS as a rediss:// REDIS_URL)",
    })
    .refine((e) => !e.REDIS_CLUSTER_TLS_CA || e.REDIS_CLUSTER_TLS === "1", {
      path: ["REDIS_CLUSTER_TLS_CA"],
      message: "needs REDIS_CLUSTER_TLS=1",
    })
    .refine((e) => !e.REDIS_CLUSTER_TLS_CA || existsSync(e.REDIS_CLUSTER_TLS_CA), {
      path: ["REDIS_CLUSTER_TLS_CA"],
      message: "no such file",
    })

    .safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}\nSee README.md#configuration and .env.example.`);
  }
  return parsed.data;
}

/** The rate limits: the defaults with RATE_LIMITS' overrides. */
export function limitRules(env: Env): LimitRules {
  return { ...defaultLimits, ...env.RATE_LIMITS };
}

/** The settings of `createApp` that come straight from the environment. */
export function appSecurityConfig(
  env: Env,
): Pick<
  AppConfig,
  "cookies" | "allowedOrigins" | "trustProxy" | "limits" | "maxSocketsPerUser" | "lab" | "metricsToken"
> {
  return {
    cookies: { secure: env.SECURE_COOKIES === "1", sameSite: env.COOKIE_SAMESITE },
    ...(env.ALLOWED_ORIGINS ? { allowedOrigins: env.ALLOWED_ORIGINS } : {}),
    trustProxy:
      env.TRUST_PROXY === "0" || env.TRUST_PROXY === "1"
        ? env.TRUST_PROXY === "1"
        : env.TRUST_PROXY.split(",").map((entry) => entry.trim()),
    limits: limitRules(env),
    maxSocketsPerUser: env.MAX_SOCKETS_PER_USER,
    lab: env.LAB === "1",
    ...(env.METRICS_TOKEN ? { metricsToken: env.METRICS_TOKEN } : {}),
  };
}

/** UNREAD_TTL_DAYS in ms (0: off). */
export function unreadTtlMs(env: Env): number {
  return Math.round(env.UNREAD_TTL_DAYS * 86_400_000);
}

/** Loads `<root>/.env` when present; variables already set in the environment win. */
export function loadDotEnv(root: string = projectRoot): void {
  const file = join(root, ".env");
  if (existsSync(file)) process.loadEnvFile(file);
}

/** What every entry point calls first: .env, then validation (throws naming each bad variable), then the log's level and format. */
export function loadEnv(root: string = projectRoot): Env {
  loadDotEnv(root);
  // The format first, as asked if it is one, so that a bad value elsewhere is reported readably on a terminal.
  const format = process.env.LOG_FORMAT;
  setLogFormat(format === "json" || format === "pretty" ? format : "auto");
  const env = readEnv();
  logger.level = env.LOG_LEVEL;
  setLogFormat(env.LOG_FORMAT);
  return env;
}
