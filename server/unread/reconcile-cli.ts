import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Emitter } from "@socket.io/redis-emitter";
import { Server } from "socket.io";
import { loadEnv, projectRoot, unreadTtlMs } from "../env.ts";
import { createDb } from "../db/prisma.ts";
import { servicesFile as servicesFileIn } from "../embedded/services.ts";
import { adapterKey, redisAdapter } from "../realtime/adapter.ts";
import {
  createAdapterClients,
  createRedis,
  describeRedisTarget,
  redisTargetOf,
  type RedisTarget,
} from "../redis/client.ts";
import { SETTINGS_KEY, userRoom } from "../redis/keys.ts";
import { reconcile } from "./reconcile.ts";
import { createUnreadService } from "./unread.service.ts";

/**
 * `npm run reconcile`: one reconciliation pass over every user, then a report. Connects to DATABASE_URL and
 * REDIS_URL (or REDIS_CLUSTER_NODES), or, with neither set, to the embedded services a running `npm start` recorded
 * in DATA_DIR/services.json: both from one place, never a database of one deployment with a Redis of another.
 * Exit status: 0 when every drift found was repaired, 1 when some was not or the pass failed (the error printed),
 * 2 when it does not know where to connect.
 */
const env = loadEnv();
const servicesFile = servicesFileIn(resolve(projectRoot, env.DATA_DIR));
const given = { databaseUrl: env.DATABASE_URL, redis: redisTargetOf(env) };
if ((given.databaseUrl === undefined) !== (given.redis === undefined)) {
  console.error(
    given.databaseUrl === undefined
      ? "REDIS_URL (or REDIS_CLUSTER_NODES) is set but DATABASE_URL is not: set both, for the same deployment."
      : "DATABASE_URL is set but REDIS_URL (or REDIS_CLUSTER_NODES) is not: set both, for the same deployment.",
  );
  process.exit(2);
}
const recorded =
  given.databaseUrl === undefined && existsSync(servicesFile)
    ? (JSON.parse(readFileSync(servicesFile, "utf8")) as { databaseUrl?: string; redis?: RedisTarget })
    : given;
const { databaseUrl, redis: redisTarget } = recorded;
if (!databaseUrl || !redisTarget) {
  console.error(
    "Set DATABASE_URL and REDIS_URL (or REDIS_CLUSTER_NODES), or start Tally with `npm start` first (it records its services in DATA_DIR).",
  );
  process.exit(2);
}
console.error(
  `reconciling ${describeDatabase(databaseUrl)} against ${describeRedisTarget(redisTarget)}` +
    (given.databaseUrl === undefined ? ` (recorded in ${servicesFile})` : ""),
);

const db = createDb(databaseUrl);
const redis = createRedis(redisTarget, { maxRetriesPerRequest: 1 });
// The expiry the instances run with (they record it at start): a pass with another one counted expired messages
// again for every user, or dropped unexpired ones, and exited 0 (an operator's walkthrough: a total of 0 became 660).
const running = await redis.hget(SETTINGS_KEY, "unreadTtlMs").catch(() => null);
const asked = process.env.UNREAD_TTL_DAYS === undefined ? null : unreadTtlMs(env);
if (running !== null && asked !== null && Number(running) !== asked) {
  console.error(
    `UNREAD_TTL_DAYS gives an expiry of ${asked} ms, but the instances run with ${running} ms: unset it (the instances' is used) or set theirs.`,
  );
  process.exit(2);
}
const ttlMs = asked ?? (running === null ? 0 : Number(running));
const pushes = pushChannel(redisTarget);
const emitter = pushes.emitter;
const unread = createUnreadService({
  redis,
  db,
  ttlMs,
  onResync: (userId) => emitter.to(userRoom(userId)).emit("unread:stale"),
});
const started = Date.now();
try {
  const report = await reconcile({
    db,
    unread,
    // Tell the repaired users' open tabs, on every instance, to resync.
    onRepaired: (userIds) => emitter.to(userIds.map(userRoom)).emit("unread:stale"),
  });
  console.log(`users checked:        ${report.usersChecked}`);
  console.log(`without Redis state:  ${report.usersWithoutState} (rebuilt on first touch)`);
  console.log(`drifted:              ${report.drifted}`);
  console.log(`repaired:             ${report.repaired}`);
  console.log(
    `sum repairs:          ${report.scriptRepairs} (stored sums rebuild.lua found off their parts, all time)`,
  );
  for (const example of report.examples) console.log(`  user ${example.userId}: ${example.problems.join("; ")}`);
  console.log(`parked outbox entries: ${report.parkedOutbox} (failed too often; see lastError, then delete them)`);
  for (const e of report.parkedExamples)
    console.log(`  #${e.id} ${e.kind} conversation ${e.conversationId} user ${e.userId}: ${e.lastError ?? "?"}`);
  console.log(`old departures deleted: ${report.departuresForgotten} (older than a day: no late event can come)`);
  console.log(`took ${Date.now() - started} ms`);
  process.exitCode = report.drifted === report.repaired ? 0 : 1;
} catch (err) {
  // A database or Redis out of reach: said, and a failure for whatever runs this (cron, CI), not a clean pass.
  // Prisma's message quotes the call site first; its last line says what went wrong.
  const message = (err instanceof Error ? err.message : String(err)).trim().split("\n").at(-1);
  console.error(`reconciliation failed: ${message}`);
  process.exitCode = 1;
} finally {
  // quit() waits for the publishes queued before it.
  await Promise.allSettled([pushes.close(), redis.quit(), db.$disconnect()]);
  process.exit();
}

/**
 * How this process reaches the instances' sockets: on one Redis, the Socket.IO emitter (it only publishes); on
 * a cluster, where the instances listen on sharded channels the emitter does not know, a Socket.IO server with no
 * listener and the instances' own sharded adapter.
 */
function pushChannel(target: RedisTarget): {
  emitter: { to(rooms: string | string[]): { emit(event: "unread:stale"): unknown } };
  close(): Promise<unknown>;
} {
  const clients = createAdapterClients(target);
  if (clients.sharded) {
    const io = new Server({ adapter: redisAdapter(clients) });
    return {
      emitter: io,
      close: async () => {
        // Never attached to an HTTP server, it has no engine: close() closes the adapters, then throws on that.
        await io.close().catch(() => undefined);
        return Promise.allSettled([clients.pub.quit(), clients.sub.quit()]);
      },
    };
  }
  void clients.sub.quit();
  return { emitter: new Emitter(clients.pub, { key: adapterKey(clients.prefix) }), close: () => clients.pub.quit() };
}

/** The database a URL names, without its password: `user@host:port/database`. */
function describeDatabase(url: string): string {
  try {
    const parsed = new URL(url);
    return `database ${parsed.username ? `${decodeURIComponent(parsed.username)}@` : ""}${parsed.host}${parsed.pathname}`;
  } catch {
    return "database (DATABASE_URL does not parse as a URL)";
  }
}
