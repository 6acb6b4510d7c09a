import { pino } from "pino";

/** The one logger: JSON lines on stdout. */
export const logger = pino({ level: process.env.LOG_LEVEL ?? "info", base: { pid: process.pid } });
export type Logger = typeof logger;
