import type { Server as HttpServer } from "node:http";
import type { Socket } from "socket.io";
import type { Limits } from "./limits/limits.ts";
import type { RedisClient } from "./redis/client.ts";
import type { ConversationService } from "./conversations/conversations.service.ts";
import type { Db } from "./db/prisma.ts";
import type { Logger } from "./log.ts";
import type { Notifier } from "./realtime/notifier.ts";
import type { TallyServer } from "./realtime/types.ts";
import type { SessionService } from "./sessions/sessions.service.ts";
import type { SnapshotService } from "./unread/snapshot.service.ts";

/** Any namespace, as the socket cap needs it: the sockets of a room, on every instance. */
export interface SocketsByRoom {
  in(room: string): { fetchSockets(): Promise<unknown[]> };
}

/** What an optional module (the consistency lab) gets to mount itself with. */
export interface ModuleContext {
  io: TallyServer;
  httpServer: HttpServer;
  redis: RedisClient;
  db: Db;
  sessions: SessionService;
  conversations: ConversationService;
  snapshots: SnapshotService;
  notifier: Notifier;
  log: Logger;
  limits: Limits;
  /** The session check and per-user socket cap of the chat's namespace, for another namespace's sockets. */
  gate: (nsp: SocketsByRoom) => (socket: Socket, next: (err?: Error) => void) => void;
}

/** An optional module: one function that mounts it and gives back how to close it with the app. */
export type AppModule = (ctx: ModuleContext) => { close(): Promise<void> };
