import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Emitter } from "@socket.io/redis-emitter";
import { Server } from "socket.io";
import { loadEnv, projectRoot, unreadTtlMs } from "../env.ts";
import { createDb } from "../db/prisma.ts";
import { redisAdapter } from "../realtime/adapter.ts";
import {
  createAdapterClients,
  createRedis,
  describeRedisTarget,
  redisTargetOf,
  type RedisTarget,
} from "../redis/client.ts";
import { userRoom } from "../redis/keys.ts";
import { reconcile } from "./reconcile.ts";
import { createUnreadService } from "./unread.service.ts";

/**
 * `npm run reconcile`: one reconciliation pass over every user, then a report. Connects to DATABASE_URL and
 * REDIS_URL (or REDIS_CLUSTER_NODES), or to the embedded services a running `npm start` recorded in
 * DATA_DIR/services.json.
 */
const env = loadEnv();
const servicesFile = join(resolve(projectRoot, env.DATA_DIR), "services.json");
const recorded =
  existsSync(servicesFile) && (!env.DATABASE_URL || !redisTargetOf(env))
    ? (JSON.parse(readFileSync(servicesFile, "utf8")) as { databaseUrl?: string; redis?: RedisTarget })
    : {};
const databaseUrl = env.DATABASE_URL ?? recorded.databaseUrl;
const redisTarget = redisTargetOf(env) ?? recorded.redis;
if (!databaseUrl || !redisTarget) {
  console.error(
    "Set DATABASE_URL and REDIS_URL (or REDIS_CLUSTER_NODES), or start Tally with `npm start` first (it records its services in DATA_DIR).",
  );
  process.exit(2);
}

const db = createDb(databaseUrl);
const redis = createRedis(redisTarget, { maxRetriesPerRequest: 1 });
const pushes = pushChannel(redisTarget);
const emitter = pushes.emitter;
const unread = createUnreadService({
  redis,
  db,
  ttlMs: unreadTtlMs(env),
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
  console.error(`reconciling against ${describeRedisTarget(target)}`);
  const clients = createAdapterClients(target);
  if (clients.sharded) {
    const io = new Server({ adapter: redisAdapter(clients) });
    return {
      emitter: io,
      close: async () => {
        await io.close();
        return Promise.allSettled([clients.pub.quit(), clients.sub.quit()]);
      },
    };
  }
  void clients.sub.quit();
  return { emitter: new Emitter(clients.pub), close: () => clients.pub.quit() };
}
