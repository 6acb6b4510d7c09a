import { pino } from "pino";
import { prettyFactory } from "pino-pretty";
import { ConfigError } from "./errors.ts";

/** Where log lines go: JSON lines on stdout for machines, or one readable line per event for a person. */
export type LogFormat = "json" | "pretty";

let write: (line: string) => void = (line) => void process.stdout.write(line);

/**
 * The one logger. Its level and format are set by loadEnv() (server/env.ts) from LOG_LEVEL and LOG_FORMAT once
 * the environment is read and validated, so a .env value counts and a bad one is reported by name. Until then it
 * writes JSON at level info.
 */
export const logger = pino({ level: "info", base: { pid: process.pid } }, { write: (line: string) => write(line) });
export type Logger = typeof logger;

/** "auto" is pretty on a terminal and JSON otherwise (a pipe, a file, a log collector). */
export function setLogFormat(format: LogFormat | "auto"): void {
  const pretty = format === "pretty" || (format === "auto" && process.stdout.isTTY === true);
  if (!pretty) {
    write = (line) => void process.stdout.write(line);
    return;
  }
  // The formatter alone, synchronous: a line is on the terminal before the next step starts, and none is lost at exit.
  const prettify = prettyFactory({
    colorize: process.stdout.isTTY === true,
    translateTime: "SYS:HH:MM:ss",
    ignore: "pid,hostname",
    singleLine: true,
  });
  write = (line) => void process.stdout.write(prettify(line));
}

/** Logs why a process could not start: a configuration error as its message alone, anything else with its stack. */
export function logStartFailure(err: unknown, otherwise: string): void {
  if (err instanceof ConfigError) logger.fatal(err.message);
  else logger.fatal({ err }, err instanceof Error ? err.message : otherwise);
}
