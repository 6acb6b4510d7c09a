import type { ConversationDTO, MessageDelivery, UnreadUpdate } from "../contracts/index.ts";
import { sessionRoom, userRoom } from "../redis/keys.ts";
import type { TallyServer } from "./types.ts";

/** What the services announce; the Socket.IO implementation reaches every tab on every instance. */
export interface Notifier {
  /** A stored message: `message:new` to every member's tabs and `unread:changed` to each member in `updates`. */
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
 * How a message's pushes reach the other instances. `one-message` (the classic adapter, one Redis): one server-side
 * emit carries the message and every count it changed, and each instance hands it to its own tabs; the classic
 * adapter sends every broadcast to every instance anyway, so this is one message for all where there were two or
 * more. `per-room` (the sharded adapter, a cluster): a broadcast per room, which reaches only the instances holding
 * that room, so push traffic per instance follows its users, not the size of the deployment. `local`: no adapter.
 */
export type DeliveryMode = "one-message" | "per-room" | "local";

/** Pushes through Socket.IO; with `one-message`, the listener for other instances' deliveries is registered here. */
export function socketNotifier(io: TallyServer, { deliveries }: { deliveries: DeliveryMode }): Notifier {
  if (deliveries === "one-message") io.on("message:delivered", (delivery) => deliverLocally(io, delivery));
  return {
    messageDelivered: (delivery) => {
      if (deliveries === "per-room") {
        io.to(delivery.memberIds.map(userRoom)).emit("message:new", { message: delivery.message });
        for (const { userId, update } of delivery.updates) io.to(userRoom(userId)).emit("unread:changed", update);
        return;
      }
      deliverLocally(io, delivery);
      if (deliveries === "one-message") io.serverSideEmit("message:delivered", delivery);
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
