import { readFile } from "node:fs/promises";

/**
 * True when `pid` runs a `name` process whose parent is no longer a Node.js process: the Tally process that
 * started it was killed without its graceful stop (SIGKILL), and the service was re-parented.
 */
export async function isOrphanOf(pid: number, name: string): Promise<boolean> {
  try {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8");
    if (!cmdline.includes(name)) return false;
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (ppid <= 1) return true;
    const parent = await readFile(`/proc/${ppid}/cmdline`, "utf8");
    return !/node|tsx/.test(parent);
  } catch {
    // No such process, or no /proc (macOS): nothing to clean up.
    return false;
  }
}

/** Stops an orphaned service recorded in `pidFile` and waits for it to exit. */
export async function stopOrphan(
  pidFile: string,
  name: string,
  signal: NodeJS.Signals = "SIGTERM",
): Promise<number | null> {
  const pid = Number.parseInt((await readFile(pidFile, "utf8").catch(() => "")).split("\n")[0] ?? "", 10);
  if (!Number.isInteger(pid) || pid <= 0 || !(await isOrphanOf(pid, name))) return null;
  process.kill(pid, signal);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return pid;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return pid;
}
