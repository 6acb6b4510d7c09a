import { format, stripVTControlCharacters } from "node:util";
import { pino } from "pino";
import { prettyFactory } from "pino-pretty";
import { ConfigError } from "./errors.ts";

/** Where log lines go: JSON lines on stdout for machines, or one readable line per event for a person. */
export type LogFormat = "json" | "pretty";

let write: (line: string) => void = (line) => void process.stdout.write(line);
let json = true;

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
  json = !pretty;
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

/** Whether log lines go out as JSON (LOG_FORMAT=json, or auto with stdout not a terminal). */
export function logsJson(): boolean {
  return json;
}

/** What a library or a child printed, as the logger writes it: without colours, and nothing for a blank line. */
export function logLine(log: Logger, level: "debug" | "info" | "warn" | "error", from: string, text: string): void {
  const line = stripVTControlCharacters(text).trimEnd();
  if (line.trim() !== "") log[level]({ from }, line);
}

/**
 * Sends what libraries print with `console` through the logger, each line tagged `from`: with JSON logs, Next.js's
 * own lines ("✓ Running next.config.js took 35ms" at every start, its request errors) broke the one-JSON-object-a-line
 * stream a log collector reads. For a server's process only: the CLIs print their results with console.log.
 */
export function consoleThroughLogger(from: string, log: Logger = logger): void {
  const to =
    (level: "debug" | "info" | "warn" | "error") =>
    (...args: unknown[]): void =>
      logLine(log, level, from, format(...args)); // one entry a call: a stack stays whole
  Object.assign(console, {
    log: to("info"),
    info: to("info"),
    debug: to("debug"),
    warn: to("warn"),
    error: to("error"),
  });
}
