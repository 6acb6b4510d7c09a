import { pino } from "pino";

/**
 * The one logger: JSON lines on stdout. Its level is set by loadEnv() (server/env.ts) from LOG_LEVEL once the
 * environment is read and validated, so a .env value counts and a bad one is reported by name.
 */
export const logger = pino({ level: "info", base: { pid: process.pid } });
export type Logger = typeof logger;
