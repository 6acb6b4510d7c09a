/**
 * The floor: what carrying one message from a sender on one instance to a recipient on another costs any
 * Socket.IO app on the same Redis adapter, and nothing more: no session check, no database, no counters. The
 * benchmark runs two of these beside Tally's instances (as child processes, on the same cores) and drives both with
 * the same load generator (floor.ts). A socket's handshake names its user (`auth.token`, a number) and joins that
 * user's room; `send` emits `arrived` to the recipient's room through the adapter, then acknowledges.
 * Environment as Tally's (PORT, HOST, REDIS_URL, LOG_LEVEL); /api/health answers 200 once the subscriber is ready.
 */
import { createServer } from "node:http";
import { createAdapter } from "@socket.io/redis-adapter";
import { Server } from "socket.io";
import { loadEnv } from "../../env.ts";
import { logger } from "../../log.ts";
import { createAdapterClients } from "../../redis/client.ts";
import { userRoom } from "../../redis/keys.ts";
import type { FloorClientEvents, FloorServerEvents } from "./floor.ts";

const env = loadEnv();
if (!env.REDIS_URL) throw new Error("REDIS_URL is required: the floor relay runs on one redis-server");

const clients = createAdapterClients(env.REDIS_URL);
const httpServer = createServer((req, res) => {
  const ready = req.url === "/api/health" && clients.sub.status === "ready";
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
    io.to(userRoom(message.to)).emit("arrived", { k: message.k, n: message.n });
    ack();
  });
});
httpServer.listen(env.PORT, env.HOST, () => logger.info({ port: env.PORT }, "floor relay listening"));

// A clean exit, so that node --cpu-prof writes its profile.
process.once("SIGTERM", () => {
  void io.close().finally(async () => {
    await Promise.allSettled([clients.pub.quit(), clients.sub.quit()]);
    process.exit(0);
  });
});
