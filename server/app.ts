import type { IncomingMessage, Server as HttpServer, ServerResponse } from "node:http";
import { Server } from "socket.io";
import { conversationActions } from "./conversations/conversations.handlers.ts";
import { createConversationService } from "./conversations/conversations.service.ts";
import { createRemoval } from "./conversations/removal.ts";
import type { Db } from "./db/prisma.ts";
import type { AppConfig } from "./env.ts";
import { createApiHandler } from "./http/api.ts";
import { createSecurityHeaders, socketHeaders } from "./http/headers.ts";
import { clientAddress, originAllowed } from "./http/origin.ts";
import { createLimits } from "./limits/limits.ts";
import { logger as defaultLogger, type Logger } from "./log.ts";
import { createMetrics, metricsRoute, type Metrics } from "./metrics/metrics.ts";
import { createDeletionService } from "./messages/deletion.ts";
import { createMessageFanout } from "./messages/fanout.ts";
import { registerMessageHandlers } from "./messages/messages.handlers.ts";
import { createMessageService } from "./messages/messages.service.ts";
import type { AppModule, SocketsByRoom } from "./modules.ts";
import { createOutbox } from "./outbox/outbox.ts";
import { createRelay } from "./outbox/relay.ts";
import { withTimeout } from "./limits/deadline.ts";
import { endAtExpiry, joinSessionRooms, requireSession } from "./sessions/socket-gate.ts";
import { socketNotifier, type Notifier } from "./realtime/notifier.ts";
import { MAX_FRAME_BYTES, textOnlyParser } from "./realtime/parser.ts";
import { answerUnknownCommands, commandsSettled, observeCommands } from "./realtime/command.ts";
import type { TallyServer } from "./realtime/types.ts";
import { redisAdapter } from "./realtime/adapter.ts";
import type { AdapterClients, RedisClient } from "./redis/client.ts";
import { sessionRoom, userRoom } from "./redis/keys.ts";
import { sessionActions } from "./sessions/sessions.handlers.ts";
import { createSessionService } from "./sessions/sessions.service.ts";
import { createReadService } from "./unread/read.service.ts";
import { periodicReconcile, reconcile } from "./unread/reconcile.ts";
import { createSnapshotService } from "./unread/snapshot.service.ts";
import { createStateService } from "./unread/state.service.ts";
import { registerUnreadHandlers } from "./unread/unread.handlers.ts";
import { createUnreadService } from "./unread/unread.service.ts";
import { userActions } from "./users/users.handlers.ts";
import { createUserDirectory } from "./users/users.service.ts";
import { createBlockService } from "./users/blocks.service.ts";
import { throttle } from "./limits/throttle.ts";

/** How often, at most, a reconnecting adapter subscriber makes every local tab resync. */
const RESYNC_EVERY_MS = 2000;

export interface AppDeps {
  httpServer: HttpServer;
  /** Command connection with Tally's scripts defined (server/redis/client.ts). */
  redis: RedisClient;
  db: Db;
  config: AppConfig;
  /** Pub/sub pair for the Socket.IO Redis adapter; without it the instance runs alone. */
  adapterClients?: AdapterClients;
  /** Everything that is not /api or Socket.IO (the Next.js request handler). */
  fallback?: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
  /** Optional modules (the consistency lab) that mount themselves on the app; see server/modules.ts. */
  modules?: AppModule[];
  /** Development mode (Next's dev server needs 'unsafe-eval' in the script policy). */
  dev?: boolean;
  log?: Logger;
  /** Tests only: the instant (ms) unread expiry is judged at; unset in production, where Redis' TIME is. */
  clock?: () => number;
}

export interface App {
  io: TallyServer;
  metrics: Metrics;
  notifier: Notifier;
  relay: ReturnType<typeof createRelay>;
  close(): Promise<void>;
}

/** Builds Tally on an http.Server without globals, so tests build it exactly as production does. */
export function createApp({
  httpServer,
  redis,
  db,
  config,
  adapterClients,
  fallback,
  modules = [],
  dev = false,
  log = defaultLogger,
  clock,
}: AppDeps): App {
  // Late-bound: the notifier needs the Socket.IO server, built below, and the metrics need the service.
  let notifyStale: (userIds: number[]) => void = () => {};
  let countRebuild: (how: "read" | "joined") => void = () => {};
  const unread = createUnreadService({
    redis,
    db,
    ttlMs: config.unreadTtlMs ?? 0,
    clock,
    onResync: (userId) => notifyStale([userId]),
    onRebuild: (how) => countRebuild(how),
  });
  const sessions = createSessionService({ db });
  const limits = createLimits({ redis, rules: config.limits });

  const io: TallyServer = new Server({
    serveClient: false,
    // Leave other upgrade requests (Next.js dev reloads) to their own listener.
    destroyUpgrade: !fallback,
    // The handshake (polling or WebSocket) from a page of another origin is refused before any session check.
    allowRequest: (req, callback) => callback(null, originAllowed(req, config.allowedOrigins, config.trustProxy)),
    // JSON packets only, in frames of at most 64 kB: what a client sends is small (server/realtime/parser.ts).
    parser: textOnlyParser,
    maxHttpBufferSize: MAX_FRAME_BYTES,
    ...(adapterClients ? { adapter: redisAdapter(adapterClients) } : {}),
  });
  const notifier = socketNotifier(io, {
    deliveries: adapterClients ? (adapterClients.sharded ? "per-room" : "one-message") : "local",
    ...(adapterClients && !adapterClients.sharded
      ? { subscriber: adapterClients.sub, prefix: adapterClients.prefix }
      : {}),
    log,
  });
  notifyStale = (userIds) => notifier.unreadStale(userIds);
  const outbox = createOutbox(db, log);
  const metrics = createMetrics({
    outbox: async () => {
      const [pending, parked] = await Promise.all([
        db.outboxEvent.count({ where: { deadAt: null } }),
        db.outboxEvent.count({ where: { deadAt: { not: null } } }),
      ]);
      return { pending, parked };
    },
    sockets: () => io.of("/").sockets.size,
    sendsWaiting: () => messages.waiting(),
    rebuildsWaiting: () => unread.rebuildsWaiting(),
  });
  countRebuild = metrics.rebuilt;
  observeCommands(io, metrics.command);
  const observe = metrics.sendStage;

  // One story per folder: reading and sync (unread/), sending (messages/), membership (conversations/).
  const snapshots = createSnapshotService({ db, unread, onRead: metrics.syncRead });
  const reads = createReadService({ db, unread, notifier, outbox });
  const states = createStateService({ db, unread, notifier, outbox });
  const fanout = createMessageFanout({ db, unread, notifier, outbox, log, observe });
  const deletions = createDeletionService({ db, unread, notifier, outbox, log });
  const messages = createMessageService({
    db,
    outbox,
    onGroup: metrics.sendGroup,
    chargeMentions: (sender, mentioned) => limits.consume("mention", { userId: sender.id }, mentioned),
  });
  const blocks = createBlockService({ db });
  const conversations = createConversationService({
    db,
    forgetGone: async (userIds, conversationId) => {
      await Promise.all(userIds.map((userId) => unread.forgetGone(userId, conversationId)));
    },
  });
  const removal = createRemoval({ unread, notifier, outbox, log });
  const relay = createRelay({
    db,
    log,
    replayers: {
      message: fanout.replay,
      read: reads.replay,
      remove: removal.replay,
      state: states.replay,
      deletion: deletions.replay,
    },
  });

  const api = createApiHandler({
    sessions,
    accounts: sessionActions({ sessions, limits, notifier }),
    conversations: conversationActions({ conversations, snapshots, removal, notifier, limits, log }),
    users: userActions({ users: createUserDirectory({ db }), blocks, limits, notifier }),
    lab: config.lab,
    unread: { snapshots, limits },
    messages: { messages, limits },
    log,
    cookies: config.cookies,
    trustProxy: config.trustProxy,
    ...(config.allowedOrigins ? { allowedOrigins: config.allowedOrigins } : {}),
    ...(config.demo ? { demo: config.demo } : {}),
    health: async () => {
      try {
        await withTimeout(Promise.all([redis.ping(), db.$queryRaw`SELECT 1`]), 2000);
        return true;
      } catch {
        return false;
      }
    },
  });

  const securityHeaders = createSecurityHeaders({ hsts: config.cookies.secure, dev });
  const scrape = metricsRoute(metrics, config.metricsToken);

  // Registered before Socket.IO attaches: engine.io answers its own path and hands every other request here.
  httpServer.on("request", (req: IncomingMessage, res: ServerResponse) => {
    securityHeaders(req, res)
      .then(async () => (await scrape(req, res)) || api(req, res))
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
  // Socket.IO's own answers (polling, the upgrade) get the security headers too.
  const engineHeaders = socketHeaders({ hsts: config.cookies.secure });
  io.engine.on("headers", (headers: Record<string, string>) => Object.assign(headers, engineHeaders));

  /** A namespace's session check and socket cap: at most maxSocketsPerUser of a user's sockets in `nsp`. */
  const gate = (nsp: SocketsByRoom) =>
    requireSession(sessions, log, {
      maxSockets: config.maxSocketsPerUser,
      // Every instance answers through the adapter; an instance that does not answer in time counts as none.
      countSockets: async (userId) => (await nsp.in(userRoom(userId)).fetchSockets()).length,
      failures: { limits, addressOf: (socket) => clientAddress(socket.request, config.trustProxy) },
    });
  io.use(gate(io));

  io.on("connection", (socket) => {
    void joinSessionRooms(socket, [userRoom(socket.data.user.id), sessionRoom(socket.data.sessionId)], sessions, log);
    answerUnknownCommands(socket);
    endAtExpiry(socket);
    registerMessageHandlers(socket, {
      messages,
      fanout,
      deletions,
      limits,
      log,
      observe,
      ...(config.fault ? { fault: config.fault } : {}),
    });
    registerUnreadHandlers(socket, { reads, states, snapshots, limits, log });
  });

  const mounted = modules.map((mount) =>
    mount({ io, httpServer, redis, db, sessions, conversations, snapshots, notifier, log, limits, gate }),
  );

  /**
   * Disconnects local sockets whose session ended while this instance could not hear about it. One that expired
   * hears so first (`session:ended`); a revoked one cannot be told why, as its row is gone.
   */
  async function dropRevokedSockets(): Promise<void> {
    const local = [...io._nsps.values()].flatMap((nsp) => [...nsp.sockets.values()]);
    const dataOf = (socket: (typeof local)[number]) => socket.data as { sessionId: string; expiresAt: number };
    const valid = await sessions.stillValid([...new Set(local.map((s) => dataOf(s).sessionId))]);
    const ended = local.filter((s) => !valid.has(dataOf(s).sessionId));
    // Every namespace hears it before any socket drops: a page's sockets share one connection.
    for (const socket of ended)
      if (dataOf(socket).expiresAt <= Date.now()) socket.emit("session:ended", { reason: "expired" });
    for (const socket of ended) socket.disconnect(true);
  }

  // Pushes published while the adapter's subscriber was reconnecting are lost: every local tab resyncs. At most
  // once every RESYNC_EVERY_MS: with a cluster shard dead, its sharded subscriber comes and goes many times a second
  // until the shard is back, and each time every tab was told to resync, and did (an operator's walkthrough: 2588
  // stale pushes to one tab in 30 s, a sync flood refused by the limit, both instances at 44 % CPU for 2 clients).
  let stopResyncs = () => {};
  if (adapterClients) {
    const resync = throttle(() => {
      notifier.unreadStale("all-local");
      // A revocation broadcast may have been lost too.
      dropRevokedSockets().catch((err: unknown) => log.warn({ err }, "re-checking sessions failed"));
    }, RESYNC_EVERY_MS);
    stopResyncs = resync.cancel;
    if (adapterClients.sharded) {
      // Sharded pub/sub holds one subscriber per shard: a lost one (its master died, or it was moved off a
      // resharded slot) misses what its shard carried until it is back.
      let lost = false;
      const lose = () => void (lost = true);
      adapterClients.sub.on("-node", lose);
      adapterClients.sub.on("-subscriber", lose);
      const back = () => {
        if (!lost) return;
        lost = false;
        resync();
      };
      adapterClients.sub.on("+subscriber", back);
      adapterClients.sub.on("subscribersReady", back);
    } else {
      let wasReady = adapterClients.sub.status === "ready";
      adapterClients.sub.on("ready", () => {
        if (wasReady) resync();
        wasReady = true;
      });
    }
  }

  relay.start(config.outboxRelayMs ?? 2000);

  let reconcileTimer: NodeJS.Timeout | undefined;
  if (config.reconcileIntervalMs) {
    const periodic = periodicReconcile({
      redis,
      intervalMs: config.reconcileIntervalMs,
      pass: async () => {
        const report = await reconcile({ db, unread, onRepaired: (userIds) => notifier.unreadStale(userIds) });
        metrics.reconciled(report);
        if (report.drifted > 0) log.warn({ report }, "reconciliation repaired drift");
      },
    });
    reconcileTimer = setInterval(() => {
      periodic.tick().catch((err: unknown) => log.warn({ err }, "reconciliation pass failed"));
    }, config.reconcileIntervalMs);
    reconcileTimer.unref();
  }

  // Hourly: expired sessions go, and so does any local socket whose session ended unheard (a socket's own
  // expiry timer, endAtExpiry, is the exact one; this also covers a revocation broadcast that was lost).
  const purgeTimer = setInterval(
    () =>
      void sessions
        .purgeExpired()
        .then(dropRevokedSockets)
        .catch((err: unknown) => log.warn({ err }, "purging expired sessions failed")),
    3_600_000,
  );
  purgeTimer.unref();

  return {
    io,
    metrics,
    notifier,
    relay,
    close: async () => {
      stopResyncs();
      clearInterval(reconcileTimer);
      clearInterval(purgeTimer);
      for (const module of mounted) await module.close();
      await relay.stop();
      await new Promise<void>((resolve) => void io.close(() => resolve()));
      // A sync or a send that was running finishes before the caller disconnects the database under it.
      await withTimeout(commandsSettled(io), 5_000).catch(() => undefined);
      // Their outbox completions too (what is left undone is replayed by the next relay, harmlessly).
      await withTimeout(outbox.flush(), 5_000).catch(() => undefined);
    },
  };
}
