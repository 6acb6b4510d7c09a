import type { ChildProcess } from "node:child_process";
import { logger } from "../log.ts";

/** Keeps the last lines a child printed, to quote when it fails; every line also goes to the debug log. */
export function collectOutput(child: ChildProcess, name: string, keep = 40): { text(): string } {
  const lines: string[] = [];
  const onData = (chunk: Buffer): void => {
    for (const line of chunk.toString("utf8").split("\n")) {
      if (line.trim() === "") continue;
      logger.debug({ [name]: line });
      lines.push(line);
      if (lines.length > keep) lines.shift();
    }
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  return { text: () => lines.join("\n") };
}
