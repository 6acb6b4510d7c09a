import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import path from "node:path";
import { logger } from "../log.ts";
import { collectOutput, supervise } from "./child-output.ts";

export const HAPROXY_MISSING =
  "haproxy was not found on PATH. Install it (Debian/Ubuntu: sudo apt-get install haproxy; macOS: brew install " +
  "haproxy), or run the instances without a balancer (--no-balancer).";

const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

/** The cookie that pins a browser to its instance, for the long-polling fallback (WebSocket needs none). */
export const INSTANCE_COOKIE = "TALLY_INSTANCE";

export interface Balancer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * HAProxy's configuration for Tally: one public port in front of `instances`, round robin for new browsers, and
 * then a cookie that keeps each browser on its instance (Socket.IO's long-polling requests must reach the
 * instance that holds their session). Health checks on /api/health take a dead instance out within about two
 * seconds; `option redispatch` sends its browsers to a live one, where their sockets reconnect. Tunnels
 * (WebSocket) stay open for an hour of silence; Socket.IO's heartbeats keep live ones busy long before that.
 */
export function haproxyConfig(opts: { host: string; port: number; instances: { name: string; port: number }[] }) {
  const servers = opts.instances.map(
    (i) => `  server ${i.name} 127.0.0.1:${i.port} check cookie ${i.name} inter 1s fall 2 rise 1`,
  );
  return [
    // No maxconn: HAProxy then sizes it to the file descriptors the process may open (two per proxied connection).
    "global",
    "defaults",
    "  mode http",
    // The client's address, for TRUST_PROXY=1; it also keeps /metrics from answering through the balancer.
    "  option forwardfor",
    "  option redispatch",
    "  retries 2",
    "  timeout connect 5s",
    "  timeout client 60s",
    "  timeout server 60s",
    "  timeout tunnel 1h",
    "frontend tally",
    `  bind ${opts.host}:${opts.port}`,
    "  default_backend instances",
    "backend instances",
    "  balance roundrobin",
    `  cookie ${INSTANCE_COOKIE} insert indirect nocache httponly`,
    "  option httpchk GET /api/health",
    "  http-check expect status 200",
    ...servers,
    "",
  ].join("\n");
}

/** Starts haproxy (from the OS packages) in the foreground with a configuration written to `dir`. */
export async function startBalancer(opts: {
  host?: string;
  port: number;
  instances: { name: string; port: number }[];
  dir: string;
  /** In a process group of its own: a terminal's Ctrl-C does not reach it, and the starter stops it last. */
  ownProcessGroup?: boolean;
}): Promise<Balancer> {
  const host = opts.host ?? "127.0.0.1";
  await mkdir(opts.dir, { recursive: true });
  const file = path.join(opts.dir, "haproxy.cfg");
  await writeFile(file, haproxyConfig({ host, port: opts.port, instances: opts.instances }));
  // -db: stay in the foreground, so that stopping the child stops haproxy; -W would fork a master.
  const child = spawn("haproxy", ["-db", "-f", file], {
    stdio: ["ignore", "pipe", "pipe"],
    detached: opts.ownProcessGroup ?? false,
  });
  const output = collectOutput(child, "haproxy");
  const spawnFailed = new Promise<never>((_, reject) =>
    child.once("error", (err) =>
      reject("code" in err && err.code === "ENOENT" ? new Error(HAPROXY_MISSING, { cause: err }) : err),
    ),
  );
  const { exited, stop } = supervise(child, { signal: "SIGTERM", onParentExit: "SIGKILL", timeoutMs: STOP_TIMEOUT_MS });
  const polling = new AbortController();
  try {
    await Promise.race([
      spawnFailed,
      waitForPort(host, opts.port, polling.signal),
      exited.then(() => {
        throw new Error(
          `haproxy exited during startup (code ${child.exitCode ?? child.signalCode}):\n${output.text()}`,
        );
      }),
    ]);
  } catch (err) {
    polling.abort();
    await stop();
    throw err;
  } finally {
    polling.abort();
  }
  logger.debug({ port: opts.port, pid: child.pid }, "started haproxy");
  const shown = host === "0.0.0.0" || host === "::" ? "localhost" : host;
  return { url: `http://${shown}:${opts.port}`, port: opts.port, stop };
}

async function waitForPort(host: string, port: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline && !signal.aborted) {
    if (await accepts(host === "0.0.0.0" ? "127.0.0.1" : host, port)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!signal.aborted)
    throw new Error(`haproxy did not accept connections on port ${port} within ${READY_TIMEOUT_MS} ms`);
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.setTimeout(1_000, () => (socket.destroy(), resolve(false)));
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}
