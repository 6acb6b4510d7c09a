import type { ConversationDTO, MessageDTO, UnreadUpdate } from "../contracts/index.ts";
import { sessionRoom, userRoom } from "../redis/keys.ts";
import type { TallyServer } from "./types.ts";

/** What the services announce; the Socket.IO implementation reaches every tab on every instance. */
export interface Notifier {
  messageNew(memberIds: number[], message: MessageDTO): void;
  unreadChanged(userId: number, update: UnreadUpdate): void;
  conversationCreated(userId: number, conversation: ConversationDTO): void;
  conversationUpdated(userId: number, conversation: ConversationDTO): void;
  conversationRemoved(userId: number, conversationId: number): void;
  unreadStale(userIds: number[] | "all-local"): void;
  /** Sessions were revoked: disconnect their sockets on every instance (every namespace). */
  sessionsEnded(sessionIds: string[]): void;
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
    sessionsEnded: (sessionIds) => {
      if (sessionIds.length === 0) return;
      const rooms = sessionIds.map(sessionRoom);
      // Through the adapter this reaches every instance; the lab namespace holds sockets of the session too.
      for (const nsp of io._nsps.values()) nsp.in(rooms).disconnectSockets(true);
    },
  };
}
