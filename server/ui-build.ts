import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { logger, logLine, logsJson } from "./log.ts";

/**
 * Builds the UI (`next build`) unless `root` holds a production build: once, on a first `npm start` or
 * `start:cluster`. A person on a terminal watches Next's own progress; with JSON logs each of its lines goes through
 * the logger as it comes, tagged `from: "next build"` (stderr's as warnings), so the log stays JSON lines.
 */
export async function buildUiIfMissing(root: string): Promise<void> {
  if (existsSync(join(root, ".next", "BUILD_ID"))) return;
  logger.info("no production build yet: building the UI once (about 25 s on two cores, only on the first run)");
  const json = logsJson();
  const build = spawn("npx", ["--no-install", "next", "build"], {
    cwd: root,
    stdio: json ? ["ignore", "pipe", "pipe"] : "inherit",
  });
  for (const [stream, level] of [
    [build.stdout, "info"],
    [build.stderr, "warn"],
  ] as const)
    if (stream) createInterface({ input: stream }).on("line", (line) => logLine(logger, level, "next build", line));
  const code = await new Promise<number | null>((resolve, reject) => {
    build.once("error", reject);
    build.once("close", resolve);
  });
  if (code !== 0) throw new Error("`next build` failed");
}
