import type { IncomingMessage, Server as HttpServer, ServerResponse } from "node:http";
import { requireSession } from "./realtime/auth.ts";
import { createAdapter } from "@socket.io/redis-adapter";
import type { Redis } from "ioredis";
import { Server } from "socket.io";
import type { AppConfig } from "./config.ts";
import { registerConversationHandlers } from "./conversations/conversations.handlers.ts";
import { createConversationService } from "./conversations/conversations.service.ts";
import type { Db } from "./db/prisma.ts";
import { createApiHandler } from "./http/api.ts";
import { registerLab } from "./lab/lab.handlers.ts";
import { logger as defaultLogger, type Logger } from "./log.ts";
import { createDelivery } from "./messages/delivery.ts";
import { registerMessageHandlers } from "./messages/messages.handlers.ts";
import { createMessageService } from "./messages/messages.service.ts";
import { createOutbox } from "./outbox/outbox.ts";
import { createRelay } from "./outbox/relay.ts";
import { socketNotifier, type Notifier, type TallyServer } from "./realtime/notifier.ts";
import { userRoom } from "./redis/keys.ts";
import { createSessionService } from "./sessions/sessions.service.ts";
import { reconcile } from "./unread/reconcile.ts";
import { createUnreadService } from "./unread/unread.service.ts";

export interface AppDeps {
  httpServer: HttpServer;
  /** Command connection with Tally's scripts defined (server/redis/client.ts). */
  redis: Redis;
  db: Db;
  config: AppConfig;
  /** Pub/sub pair for the Socket.IO Redis adapter; without it the instance runs alone. */
  adapterClients?: { pub: Redis; sub: Redis };
  /** Everything that is not /api or Socket.IO (the Next.js request handler). */
  fallback?: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
  log?: Logger;
}

export interface App {
  io: TallyServer;
  notifier: Notifier;
  relay: ReturnType<typeof createRelay>;
  close(): Promise<void>;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error("timeout")), ms).unref())]);
}

/** Builds Tally on an http.Server without globals, so tests build it exactly as production does. */
export function createApp({
  httpServer,
  redis,
  db,
  config,
  adapterClients,
  fallback,
  log = defaultLogger,
}: AppDeps): App {
  // Late-bound: the notifier needs the Socket.IO server, built below.
  let notifyStale: (userIds: number[]) => void = () => {};
  const unread = createUnreadService({
    redis,
    db,
    ttlMs: config.unreadTtlMs ?? 0,
    onResync: (userId) => notifyStale([userId]),
  });
  const sessions = createSessionService({ db, secret: config.sessionSecret });
  const conversations = createConversationService({ db, unread });
  const messages = createMessageService({ db });

  const io: TallyServer = new Server({
    serveClient: false,
    // Leave other upgrade requests (Next.js dev reloads) to their own listener.
    destroyUpgrade: !fallback,
    ...(adapterClients ? { adapter: createAdapter(adapterClients.pub, adapterClients.sub) } : {}),
  });
  const notifier = socketNotifier(io);
  notifyStale = (userIds) => notifier.unreadStale(userIds);
  const outbox = createOutbox(db);
  const delivery = createDelivery({ unread, notifier, outbox, log });
  const relay = createRelay({ db, unread, notifier, log });

  const api = createApiHandler({
    sessions,
    conversations,
    messages,
    notifier,
    delivery,
    log,
    secureCookies: config.secureCookies,
    health: async () => {
      try {
        await withTimeout(Promise.all([redis.ping(), db.$queryRaw`SELECT 1`]), 2000);
        return true;
      } catch {
        return false;
      }
    },
  });

  // Registered before Socket.IO attaches: engine.io answers its own path and hands every other request here.
  httpServer.on("request", (req: IncomingMessage, res: ServerResponse) => {
    api(req, res)
      .then(async (handled) => {
        if (handled) return;
        if (fallback) return fallback(req, res);
        res.writeHead(404, { "content-type": "text/plain" }).end("Not found");
      })
      .catch((err: unknown) => {
        log.error({ err, url: req.url }, "request handler crashed");
        if (!res.headersSent) res.writeHead(500).end();
      });
  });

  io.attach(httpServer);

  io.use(requireSession(sessions, log));

  io.on("connection", (socket) => {
    void socket.join(userRoom(socket.data.user.id));
    registerMessageHandlers(socket, {
      messages,
      delivery,
      log,
      sendRate: { perSecond: config.sendRatePerSecond, burst: config.sendRateBurst },
      fault: config.fault,
    });
    registerConversationHandlers(socket, { conversations, log });
  });

  // The consistency lab (issue 4): its own namespace, its own redis-server; never chat keys.
  const lab = registerLab({ io, httpServer, redis, db, sessions, log });

  // Pushes published while the adapter's subscriber was reconnecting are lost: every local tab resyncs.
  if (adapterClients) {
    let wasReady = adapterClients.sub.status === "ready";
    adapterClients.sub.on("ready", () => {
      if (wasReady) notifier.unreadStale("all-local");
      wasReady = true;
    });
  }

  relay.start(config.outboxRelayMs ?? 2000);

  let reconcileTimer: NodeJS.Timeout | undefined;
  if (config.reconcileIntervalMs) {
    reconcileTimer = setInterval(() => {
      reconcile({ db, unread, onRepaired: (userIds) => notifier.unreadStale(userIds) })
        .then((report) => report.drifted > 0 && log.warn({ report }, "reconciliation repaired drift"))
        .catch((err: unknown) => log.warn({ err }, "reconciliation pass failed"));
    }, config.reconcileIntervalMs);
    reconcileTimer.unref();
  }

  return {
    io,
    notifier,
    relay,
    close: async () => {
      clearInterval(reconcileTimer);
      await lab.close();
      await relay.stop();
      await new Promise<void>((resolve) => void io.close(() => resolve()));
    },
  };
}
