import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { withTimeout } from "../limits/deadline.ts";

/** How long a scrape waits for the outbox's counts from PostgreSQL. */
const OUTBOX_READ_MS = 2000;

/** Where a send spends its time, in order: the database statement, the Redis counters, the pushes. */
export type SendStage = "commit" | "counters" | "push";

/** How a snapshot read Redis and PostgreSQL (server/unread/snapshot.service.ts). */
export type SyncReadOrder = "side_by_side" | "sequential";

/** Seconds since `start` (a process.hrtime.bigint() reading). */
export function since(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * One registry per app (no global default registry, so two apps in one test process do not share counters),
 * with the process' default metrics and Tally's own. Gauges that need a query read it only when scraped.
 */
export function createMetrics(sources: {
  outbox: () => Promise<{ pending: number; parked: number }>;
  sockets: () => number;
  /** Sends waiting for a group commit (server/db/group-commit.ts). */
  sendsWaiting: () => number;
  /** Rebuilds waiting for a turn to read the database (server/unread/unread.service.ts). */
  rebuildsWaiting: () => number;
}) {
  const registry = new Registry();
  // The event loop's delay sampled every 100 ms, not prom-client's 10: its timer woke an idle instance 97 times a
  // second (13 with 100), and on this kind of machine each wake-up costs 20-50 µs of CPU (docs/benchmarks.md).
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  const commands = new Counter({
    name: "tally_commands_total",
    help: "Socket commands answered, by command and outcome (ok or the error code)",
    labelNames: ["command", "outcome"] as const,
    registers: [registry],
  });
  const sendStage = new Histogram({
    name: "tally_send_stage_seconds",
    help: "Time a send spends in each stage: commit (PostgreSQL), counters (Redis), push (Socket.IO emits)",
    labelNames: ["stage"] as const,
    buckets: [0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  });
  const sendGroup = new Histogram({
    name: "tally_send_group_size",
    help: "Sends carried by each successful statement of the group path (one PostgreSQL statement, transaction and WAL flush for the group; refused and duplicate sends included); a group that failed whole is not counted, its sends retried one by one are; sends that may mention someone go another way and are not counted",
    buckets: [1, 2, 3, 4, 8, 16, 32, 64],
    registers: [registry],
  });
  const reconciliation = new Counter({
    name: "tally_reconciliation_users_total",
    help: "Users reconciliation found drifted, and repaired",
    labelNames: ["result"] as const,
    registers: [registry],
  });
  const syncReads = new Counter({
    name: "tally_sync_reads_total",
    help: "Snapshots (sync, GET /api/conversations) by how Redis and PostgreSQL were read: side_by_side (kept, since nothing the snapshot counts changed during the read) or sequential (Redis first, then PostgreSQL: the counts moved during the side-by-side read, the state was missing, or Redis counted a conversation the list did not have)",
    labelNames: ["order"] as const,
    registers: [registry],
  });
  const rebuilds = new Counter({
    name: "tally_rebuilds_total",
    help: "Rebuilds of a user's counters from PostgreSQL: read (each read of the database) and joined (a caller that found the state missing and took the rebuild already under way for that user)",
    labelNames: ["how"] as const,
    registers: [registry],
  });
  new Gauge({
    name: "tally_outbox_entries",
    help: "Outbox entries not yet applied to Redis: pending (the relay retries them) and parked (given up)",
    labelNames: ["state"] as const,
    registers: [registry],
    // Read from PostgreSQL: with the database away, the scrape answered 500 and lost every other metric (those
    // that show an outage first among them). Then this one has no samples; the rest are served.
    async collect() {
      try {
        const { pending, parked } = await withTimeout(sources.outbox(), OUTBOX_READ_MS);
        this.set({ state: "pending" }, pending);
        this.set({ state: "parked" }, parked);
      } catch {
        this.reset();
      }
    },
  });
  new Gauge({
    name: "tally_connected_sockets",
    help: "Sockets connected to this instance",
    registers: [registry],
    collect() {
      this.set(sources.sockets());
    },
  });
  new Gauge({
    name: "tally_sends_waiting",
    help: "Sends waiting to go to the database in a group (those in flight not counted); past the instance's bound a send is answered unavailable",
    registers: [registry],
    collect() {
      this.set(sources.sendsWaiting());
    },
  });
  new Gauge({
    name: "tally_rebuilds_waiting",
    help: "Rebuilds waiting for a turn to read PostgreSQL (those reading not counted): a burst after Redis lost state",
    registers: [registry],
    collect() {
      this.set(sources.rebuildsWaiting());
    },
  });
  return {
    registry,
    command(command: string, outcome: string) {
      commands.inc({ command, outcome });
    },
    sendStage(stage: SendStage, seconds: number) {
      sendStage.observe({ stage }, seconds);
    },
    sendGroup(sends: number) {
      sendGroup.observe(sends);
    },
    rebuilt(how: "read" | "joined") {
      rebuilds.inc({ how });
    },
    syncRead(order: SyncReadOrder) {
      syncReads.inc({ order });
    },
    reconciled(report: { drifted: number; repaired: number }) {
      reconciliation.inc({ result: "drifted" }, report.drifted);
      reconciliation.inc({ result: "repaired" }, report.repaired);
    },
  };
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "::ffff:127.0.0.1"]);

function sameSecret(a: string, b: string): boolean {
  const [x, y] = [Buffer.from(a), Buffer.from(b)];
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * `GET /metrics` in Prometheus' text format. With METRICS_TOKEN set, only for `Authorization: Bearer <token>`;
 * without it, only for a scraper on this machine: a loopback peer that no proxy forwarded (a request through
 * the balancer comes from loopback too, but carries X-Forwarded-For). Anyone else gets 404, as if there were none.
 */
export function metricsRoute(metrics: Metrics, token: string | undefined) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    if (req.url?.split("?")[0] !== "/metrics") return false;
    const auth = req.headers.authorization ?? "";
    const allowed = token
      ? auth.startsWith("Bearer ") && sameSecret(auth.slice(7), token)
      : LOOPBACK.has(req.socket.remoteAddress ?? "") && req.headers["x-forwarded-for"] === undefined;
    if (!allowed) {
      res.writeHead(404, { "content-type": "text/plain" }).end("Not found");
      return true;
    }
    // As every endpoint (docs/protocol.md): HEAD where GET, OPTIONS with 204, anything else 405, each with Allow.
    const allow = "GET, HEAD, OPTIONS";
    if (req.method === "OPTIONS") {
      res.writeHead(204, { allow }).end();
      return true;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      const message = `${req.method ?? "This method"} is not allowed here.`;
      res
        .writeHead(405, { allow, "content-type": "application/json; charset=utf-8" })
        .end(JSON.stringify({ ok: false, error: { code: "method_not_allowed", message } }));
      return true;
    }
    const body = await metrics.registry.metrics();
    res.writeHead(200, { "content-type": metrics.registry.contentType });
    res.end(req.method === "HEAD" ? undefined : body);
    return true;
  };
}
