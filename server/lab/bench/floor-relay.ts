/**
 * The floor: what carrying one message from a sender on one instance to a recipient on another costs any
 * Socket.IO app on the same Redis adapter, and nothing more: no session check, no database, no counters. The
 * benchmark runs two of these beside Tally's instances (as child processes, on the same cores) and drives both with
 * the same load generator (floor.ts). A socket's handshake names its user (`auth.token`, a number) and joins that
 * user's room; `send` emits `arrived` to the recipient's room through the adapter, then acknowledges.
 *
 * A message marked `durable` is first inserted into a table of its own and committed (one statement, durable as
 * the database is), and only then emitted: the least any relay pays that pushes only what it has stored, which is
 * Tally's rule. The bench reports it as a third system ("floor + commit") to show what the commit alone does to the
 * ratio against the floor.
 *
 * Environment as Tally's (PORT, HOST, REDIS_URL, DATABASE_URL, LOG_LEVEL); /api/health answers 200 once the
 * subscriber is ready and the table is there.
 */
import { createServer } from "node:http";
import { createAdapter } from "@socket.io/redis-adapter";
import pg from "pg";
import { Server } from "socket.io";
import { loadEnv } from "../../env.ts";
import { logger } from "../../log.ts";
import { createAdapterClients } from "../../redis/client.ts";
import { userRoom } from "../../redis/keys.ts";
import type { FloorClientEvents, FloorServerEvents } from "./floor.ts";

const env = loadEnv();
if (!env.REDIS_URL) throw new Error("REDIS_URL is required: the floor relay runs on one redis-server");
if (!env.DATABASE_URL) throw new Error("DATABASE_URL is required: the floor + commit stores its messages there");

const clients = createAdapterClients(env.REDIS_URL);
// Two connections, as a Tally instance's send path has one group in flight and a second beside a slow one.
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 2 });
// An idle connection that fails (the server restarted) leaves the pool; without a listener it would end the process.
pool.on("error", (err) => logger.warn({ err }, "an idle PostgreSQL connection failed"));
let tableReady = false;
pool
  .query(
    `CREATE TABLE IF NOT EXISTS bench_floor_message
       (id BIGSERIAL PRIMARY KEY, k INTEGER NOT NULL, n INTEGER NOT NULL, content TEXT NOT NULL)`,
  )
  .then(
    () => (tableReady = true),
    (err: { code?: string }) => {
      // Two relays starting at once: the other one's CREATE won (a duplicate type or table), and the table is there.
      if (err.code === "23505" || err.code === "42P07") return (tableReady = true);
      logger.error({ err }, "the floor's table could not be created");
      process.exit(1);
    },
  );
const httpServer = createServer((req, res) => {
  const ready = req.url === "/api/health" && clients.sub.status === "ready" && tableReady;
  res.writeHead(ready ? 200 : 503).end();
});
const io = new Server<FloorClientEvents, FloorServerEvents>(httpServer, {
  serveClient: false,
  // Tally's adapter (createAdapter on these clients) under a channel prefix of its own: every instance of the
  // classic adapter hears every broadcast under its prefix, and on Tally's the two systems would decode each other's.
  adapter: createAdapter(clients.pub, clients.sub, { key: "floor" }),
});
io.on("connection", (socket) => {
  void socket.join(userRoom(Number(socket.handshake.auth.token)));
  socket.on("send", (message, ack) => {
    const relay = () => {
      io.to(userRoom(message.to)).emit("arrived", { k: message.k, n: message.n });
      ack();
    };
    if (!message.durable) return relay();
    pool
      .query({
        name: "floor-insert",
        text: "INSERT INTO bench_floor_message (k, n, content) VALUES ($1, $2, $3)",
        values: [message.k, message.n, message.content],
      })
      .then(relay, (err: unknown) => {
        // Answered at once, so the load generator counts it failed instead of waiting for its timeout.
        logger.error({ err }, "a durable floor message was not stored");
        ack("not stored");
      });
  });
});
httpServer.listen(env.PORT, env.HOST, () => logger.info({ port: env.PORT }, "floor relay listening"));

// A clean exit, so that node --cpu-prof writes its profile.
process.once("SIGTERM", () => {
  void io.close().finally(async () => {
    await Promise.allSettled([clients.pub.quit(), clients.sub.quit(), pool.end()]);
    process.exit(0);
  });
});
