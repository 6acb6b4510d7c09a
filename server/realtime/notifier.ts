import type { ConversationDTO, MessageDelivery, UnreadUpdate } from "../contracts/index.ts";
import { sessionRoom, userRoom } from "../redis/keys.ts";
import type { TallyServer } from "./types.ts";

/** What the services announce; the Socket.IO implementation reaches every tab on every instance. */
export interface Notifier {
  /**
   * A stored message: `message:new` to every member's tabs and `unread:changed` to each member in `updates`, with
   * one message between instances for all of them (two before: a broadcast each, decoded by every instance).
   */
  messageDelivered(delivery: MessageDelivery): void;
  unreadChanged(userId: number, update: UnreadUpdate): void;
  conversationCreated(userId: number, conversation: ConversationDTO): void;
  conversationUpdated(userId: number, conversation: ConversationDTO): void;
  conversationRemoved(userId: number, conversationId: number): void;
  unreadStale(userIds: number[] | "all-local"): void;
  /** Sessions were revoked: disconnect their sockets on every instance (every namespace). */
  sessionsEnded(sessionIds: string[]): void;
}

/** One delivery to the tabs connected to this instance. */
function deliverLocally(io: TallyServer, { memberIds, message, updates }: MessageDelivery): void {
  io.local.to(memberIds.map(userRoom)).emit("message:new", { message });
  for (const { userId, update } of updates) io.local.to(userRoom(userId)).emit("unread:changed", update);
}

/**
 * Pushes through Socket.IO. With `acrossInstances` (the Redis adapter), deliveries also go to the other instances
 * (server-side emit), each of which hands them to its own tabs: the listener is registered here.
 */
export function socketNotifier(io: TallyServer, { acrossInstances }: { acrossInstances: boolean }): Notifier {
  if (acrossInstances) io.on("message:delivered", (delivery) => deliverLocally(io, delivery));
  return {
    messageDelivered: (delivery) => {
      deliverLocally(io, delivery);
      if (acrossInstances) io.serverSideEmit("message:delivered", delivery);
    },
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
