import type { Server } from "socket.io";
import type {
  ClientToServerEvents,
  ConversationDTO,
  InterServerEvents,
  MessageDTO,
  ServerToClientEvents,
  SocketData,
  UnreadUpdate,
} from "../contracts/index.ts";
import { userRoom } from "../redis/keys.ts";

export type TallyServer = Server<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;

/** What the services announce; the Socket.IO implementation reaches every tab on every instance. */
export interface Notifier {
  messageNew(memberIds: number[], message: MessageDTO): void;
  unreadChanged(userId: number, update: UnreadUpdate): void;
  conversationCreated(userId: number, conversation: ConversationDTO): void;
  conversationUpdated(userId: number, conversation: ConversationDTO): void;
  conversationRemoved(userId: number, conversationId: number): void;
  unreadStale(userIds: number[] | "all-local"): void;
}

export function socketNotifier(io: TallyServer): Notifier {
  return {
    messageNew: (memberIds, message) => void io.to(memberIds.map(userRoom)).emit("message:new", { message }),
    unreadChanged: (userId, update) => void io.to(userRoom(userId)).emit("unread:changed", update),
    conversationCreated: (userId, conversation) =>
      void io.to(userRoom(userId)).emit("conversation:created", { conversation }),
    conversationUpdated: (userId, conversation) =>
      void io.to(userRoom(userId)).emit("conversation:updated", { conversation }),
    conversationRemoved: (userId, conversationId) =>
      void io.to(userRoom(userId)).emit("conversation:removed", { conversationId }),
    unreadStale: (userIds) =>
      void (userIds === "all-local" ? io.local : io.to(userIds.map(userRoom))).emit("unread:stale"),
  };
}
