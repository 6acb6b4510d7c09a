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

/** What to kill if this process exits: one "exit" listener for every child, however many start and restart. */
const killAtExit = new Set<() => void>();

function atParentExit(kill: () => void): () => void {
  if (!process.listeners("exit").includes(killAll)) process.on("exit", killAll);
  killAtExit.add(kill);
  return () => void killAtExit.delete(kill);
}

function killAll(): void {
  for (const kill of killAtExit) kill();
}

/**
 * Ties a child process's life to this one: `stop()` sends `signal`, escalates to SIGKILL after `timeoutMs`, and
 * resolves once the child has exited (safe to call twice, and after the child died by itself); if this process
 * exits first, the child gets `onParentExit`, so a crashed runner leaves no server behind.
 */
export function supervise(
  child: ChildProcess,
  opts: { signal: NodeJS.Signals; onParentExit: NodeJS.Signals; timeoutMs: number },
): { exited: Promise<void>; stop(): Promise<void> } {
  const forget = atParentExit(() => void child.kill(opts.onParentExit));
  const exited = new Promise<void>((resolve) =>
    child.once("exit", () => {
      forget();
      resolve();
    }),
  );
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      forget();
      if (child.pid === undefined) return;
      if (child.exitCode === null && child.signalCode === null) child.kill(opts.signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs);
      await exited;
      clearTimeout(timer);
    })();
    return stopping;
  };
  return { exited, stop };
}
