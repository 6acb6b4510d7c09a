import type { Server as HttpServer } from "node:http";
import { requireSession } from "../realtime/auth.ts";
import type { Redis } from "ioredis";
import type { Namespace } from "socket.io";
import { demoUsers } from "../../prisma/seed-data.ts";
import type { SocketData } from "../contracts/index.ts";
import type { LabClientToServerEvents, LabServerToClientEvents } from "../contracts/lab.ts";
import type { Db } from "../db/prisma.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { command } from "../realtime/command.ts";
import type { TallyServer } from "../realtime/notifier.ts";
import { userRoom } from "../redis/keys.ts";
import type { SessionService } from "../sessions/sessions.service.ts";
import { parse } from "../validation.ts";
import { createLabService } from "./lab.service.ts";
import { botsInputSchema, runInputSchema, stopInputSchema, storyInputSchema } from "./params.ts";

export type LabNamespace = Namespace<
  LabClientToServerEvents,
  LabServerToClientEvents,
  Record<string, never>,
  SocketData
>;

export interface LabDeps {
  io: TallyServer;
  httpServer: HttpServer;
  redis: Redis;
  db: Db;
  sessions: SessionService;
  log: Logger;
}

/** Where this instance answers itself (the bots connect to it like any browser). */
function selfUrl(httpServer: HttpServer): string {
  const address = httpServer.address();
  if (address === null || typeof address === "string")
    throw new AppError("unavailable", "The server is not listening.");
  const host =
    address.family === "IPv6"
      ? address.address === "::"
        ? "[::1]"
        : `[${address.address}]`
      : address.address === "0.0.0.0"
        ? "127.0.0.1"
        : address.address;
  return `http://${host}:${address.port}`;
}

/**
 * The consistency lab on the `/lab` Socket.IO namespace: open to any signed-in user (it only touches its own
 * redis-server, or `lab:<run>:…` keys), never to anonymous sockets. Runs report to every lab tab of the user
 * who started them.
 */
export function registerLab({ io, httpServer, redis, db, sessions, log }: LabDeps): { close(): Promise<void> } {
  const lab = createLabService({ sharedRedis: redis, log: log.child({ lab: true }) });
  const nsp = io.of("/lab") as unknown as LabNamespace;

  nsp.use(requireSession(sessions, log));

  nsp.on("connection", (socket) => {
    const user = socket.data.user;
    const room = userRoom(user.id);
    void socket.join(room);

    socket.on(
      "lab:start",
      command(log, "lab:start", async (payload) => {
        const input = parse(runInputSchema, payload);
        const run = await lab.start(input.strategies, input.workload, {
          sampled: (sample) => nsp.to(room).emit("lab:sampled", sample),
          finished: (result) => nsp.to(room).emit("lab:finished", result),
          failed: (runId, message) => nsp.to(room).emit("lab:failed", { runId, message }),
        });
        return { run };
      }),
    );

    socket.on(
      "lab:stop",
      command(log, "lab:stop", async (payload) => {
        await lab.stop(parse(stopInputSchema, payload).runId);
        return {};
      }),
    );

    socket.on(
      "lab:status",
      command(log, "lab:status", async () => lab.status()),
    );

    socket.on(
      "lab:replay",
      command(log, "lab:replay", async (payload) => ({
        stories: await lab.replay(parse(storyInputSchema, payload).scenario),
      })),
    );

    socket.on(
      "bots:start",
      command(log, "bots:start", async (payload) => {
        const input = parse(botsInputSchema, payload);
        const users = input.users ?? demoUsers.filter((name) => name !== user.name);
        const found = await db.user.findMany({ where: { name: { in: users } }, select: { name: true } });
        const missing = users.filter((name) => !found.some((u) => u.name === name));
        if (missing.length > 0) {
          throw new AppError(
            "not_found",
            `No such user: ${missing.join(", ")} (the demo users are seeded with SEED_DEMO=1).`,
          );
        }
        const bots = await lab.startBots({
          baseUrl: selfUrl(httpServer),
          users,
          rate: input.rate,
          onChange: (status) => nsp.local.emit("bots:changed", status),
        });
        return { bots };
      }),
    );

    socket.on(
      "bots:stop",
      command(log, "bots:stop", async () => ({ bots: await lab.stopBots() })),
    );
  });

  return { close: () => lab.close() };
}
