import { randomBytes } from "node:crypto";
import type {
  MemberChange,
  BlockList,
  ConversationDTO,
  ConversationRemoval,
  MessageDelivery,
  MessageDTO,
  SessionEndReason,
  UnreadUpdate,
} from "../contracts/index.ts";
import type { Logger } from "../log.ts";
import { withTimeout } from "../limits/deadline.ts";
import type { RedisClient } from "../redis/client.ts";
import { sessionRoom, userRoom } from "../redis/keys.ts";
import { updateOf, type ApplyReply } from "../redis/scripts.ts";
import type { TallyServer } from "./types.ts";

/** How long a sign-out waits for the other instances to confirm its sockets are gone (then it answers anyway). */
export const CONFIRM_MS = 3_000;

/** What the services announce; the Socket.IO implementation reaches every tab on every instance. */
export interface Notifier {
  /**
   * A stored message: `message:new` to every member's tabs and `unread:changed` to each member in `updates`.
   * `published`: the other instances have it already (deliver.lua published it with the counts); only this
   * instance's tabs are left.
   */
  messageDelivered(delivery: MessageDelivery, published?: boolean): void;
  /**
   * Where deliver.lua may publish a message's delivery, and the payload's head (the members' replies follow it);
   * null when this notifier's deliveries do not go that way (a cluster, no adapter).
   */
  deliveryTarget(memberIds: number[], message: MessageDTO): { channel: string; head: string } | null;
  unreadChanged(userId: number, update: UnreadUpdate): void;
  /** A message its sender deleted (`deleted`, content ""): `message:deleted` to every member's tabs. */
  messageDeleted(memberIds: number[], message: MessageDTO): void;
  conversationCreated(userId: number, conversation: ConversationDTO): void;
  /** `change`: the add or removal that made it, and by whom (absent for a leave). */
  conversationUpdated(userId: number, conversation: ConversationDTO, change?: MemberChange): void;
  conversationRemoved(userId: number, removal: ConversationRemoval): void;
  unreadStale(userIds: number[] | "all-local"): void;
  /** The user's block list changed: every tab of theirs gets it whole. */
  blocksChanged(userId: number, list: BlockList): void;
  /**
   * Sessions ended: tells their sockets why (`session:ended`) and disconnects them, on every instance and in every
   * namespace. Resolves once every instance has confirmed it, so that a sign-out answered to its caller has no
   * socket left that could still send; or, with `confirm: false` or after CONFIRM_MS (logged), without waiting.
   */
  sessionsEnded(sessionIds: string[], reason: SessionEndReason, opts?: { confirm?: boolean }): Promise<void>;
}

/**
 * One delivery to the tabs connected to this instance. No members, no push: Socket.IO's `to([])` would reach every
 * socket (a replay of a message whose conversation has no member left reads none).
 */
function deliverLocally(io: TallyServer, { memberIds, message, updates }: MessageDelivery): void {
  if (memberIds.length === 0) return;
  io.local.to(memberIds.map(userRoom)).emit("message:new", { message });
  for (const { userId, update } of updates) io.local.to(userRoom(userId)).emit("unread:changed", update);
}

/**
 * Ends sessions on this instance: their sockets in every namespace hear why, then are disconnected (`io server
 * disconnect`). Every namespace hears it before any is disconnected: one page's sockets share one connection, which
 * the first disconnect closes.
 */
function endLocally(io: TallyServer, sessionIds: string[], reason: SessionEndReason): void {
  if (sessionIds.length === 0) return; // to([]) would reach every socket
  const rooms = sessionIds.map(sessionRoom);
  const namespaces = [...io._nsps.values()];
  for (const nsp of namespaces) nsp.local.to(rooms).emit("session:ended", { reason });
  for (const nsp of namespaces) nsp.local.in(rooms).disconnectSockets(true);
}

/**
 * How a message's pushes reach the other instances. `one-message` (the classic adapter, one Redis): one server-side
 * emit carries the message and every count it changed, and each instance hands it to its own tabs; the classic
 * adapter sends every broadcast to every instance anyway, so this is one message for all where there were two or
 * more. `per-room` (the sharded adapter, a cluster): a broadcast per room, which reaches only the instances holding
 * that room, so push traffic per instance follows its users, not the size of the deployment. `local`: no adapter.
 */
export type DeliveryMode = "one-message" | "per-room" | "local";

/** The channel deliver.lua publishes deliveries on (one redis-server: `one-message`), after the deployment's prefix. */
export const DELIVERY_CHANNEL = "tally:deliveries";

/** What precedes the members' replies in a published delivery; the replies are in the order of `memberIds`. */
interface DeliveryHead {
  from: string;
  memberIds: number[];
  message: MessageDTO;
}

/**
 * A delivery deliver.lua published: the head's JSON, a newline (JSON.stringify never writes one), then the members'
 * apply.lua replies as a JSON array. null if it is not one (or names no member: a push to no room reaches everyone).
 */
export function parseDelivery(payload: string): (MessageDelivery & { from: string }) | null {
  const cut = payload.indexOf("\n");
  if (cut < 0) return null;
  const head = JSON.parse(payload.slice(0, cut)) as DeliveryHead;
  const replies = JSON.parse(payload.slice(cut + 1)) as ApplyReply[];
  const ids = head?.memberIds;
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => Number.isSafeInteger(id) && id > 0)) return null;
  if (typeof head.message?.conversationId !== "number" || !Array.isArray(replies)) return null;
  const updates: MessageDelivery["updates"] = [];
  head.memberIds.forEach((userId, i) => {
    const result = updateOf(head.message.conversationId, replies[i] ?? [-1]);
    if (result?.changed) updates.push({ userId, update: result.update });
  });
  return { from: head.from, memberIds: head.memberIds, message: head.message, updates };
}

/**
 * Pushes through Socket.IO. With `one-message`, the listeners for other instances' deliveries are registered here:
 * the adapter's server-side emits, and with `subscriber` (the adapter's subscriber connection) the deliveries
 * deliver.lua publishes on DELIVERY_CHANNEL.
 */
export function socketNotifier(
  io: TallyServer,
  {
    deliveries,
    subscriber,
    prefix = "",
    log,
  }: {
    deliveries: DeliveryMode;
    subscriber?: RedisClient;
    /** The deployment's channel prefix (`channelPrefix`, server/redis/client.ts). */
    prefix?: string;
    log?: Logger;
  },
): Notifier {
  const channel = `${prefix}${DELIVERY_CHANNEL}`;
  const self = randomBytes(8).toString("hex");
  /**
   * How this instance's own deliveries begin (`from` is the first key `deliveryTarget` writes, and `self` is hex):
   * Redis hands every publication back to its publisher too, which drops it on this prefix without parsing it.
   */
  const ownHead = `{"from":"${self}",`;
  const published = deliveries === "one-message" && subscriber !== undefined;
  if (deliveries === "one-message") io.on("message:delivered", (delivery) => deliverLocally(io, delivery));
  io.on("session:ended", ({ sessionIds, reason }) => endLocally(io, sessionIds, reason));
  /**
   * Ends sessions here, then on the other instances: one server-side event on the chat's namespace, which each
   * instance handles before the `fetchSockets` that confirms it (the adapter handles a namespace's requests in the
   * order they were published), and which carries the reason, so a socket never drops without it.
   */
  const endEverywhere = (sessionIds: string[], reason: SessionEndReason) => {
    endLocally(io, sessionIds, reason);
    if (deliveries !== "local") io.serverSideEmit("session:ended", { sessionIds, reason });
  };
  if (published) {
    // Subscribed (and, after a reconnection, subscribed again by ioredis) on the adapter's connection, whose
    // reconnections already make every local tab resync (app.ts).
    void subscriber.subscribe(channel).catch((err: unknown) => log?.error({ err }, "subscribing failed"));
    subscriber.on("message", (from: string, payload: string) => {
      if (from !== channel || payload.startsWith(ownHead)) return;
      try {
        const delivery = parseDelivery(payload);
        if (delivery) deliverLocally(io, delivery);
      } catch (err) {
        log?.warn({ err }, "ignoring a malformed delivery");
      }
    });
  }
  return {
    deliveryTarget: (memberIds, message) =>
      published ? { channel, head: `${JSON.stringify({ from: self, memberIds, message })}\n` } : null,
    messageDelivered: (delivery, alreadyPublished = false) => {
      if (delivery.memberIds.length === 0) return; // to([]) would reach every socket
      if (deliveries === "per-room") {
        io.to(delivery.memberIds.map(userRoom)).emit("message:new", { message: delivery.message });
        for (const { userId, update } of delivery.updates) io.to(userRoom(userId)).emit("unread:changed", update);
        return;
      }
      deliverLocally(io, delivery);
      if (deliveries === "one-message" && !alreadyPublished) io.serverSideEmit("message:delivered", delivery);
    },
    unreadChanged: (userId, update) => void io.to(userRoom(userId)).emit("unread:changed", update),
    messageDeleted: (memberIds, message) => {
      if (memberIds.length > 0) io.to(memberIds.map(userRoom)).emit("message:deleted", { message }); // to([]): everyone
    },
    conversationCreated: (userId, conversation) =>
      void io.to(userRoom(userId)).emit("conversation:created", { conversation }),
    conversationUpdated: (userId, conversation, change) =>
      void io.to(userRoom(userId)).emit("conversation:updated", change ? { conversation, change } : { conversation }),
    conversationRemoved: (userId, removal) => void io.to(userRoom(userId)).emit("conversation:removed", removal),
    blocksChanged: (userId, list) => void io.to(userRoom(userId)).emit("blocks:changed", list),
    unreadStale: (userIds) =>
      void (userIds === "all-local" ? io.local : io.to(userIds.map(userRoom))).emit("unread:stale"),
    sessionsEnded: async (sessionIds, reason, { confirm = true } = {}) => {
      if (sessionIds.length === 0) return;
      // This instance's own at once, the others' through the adapter.
      endEverywhere(sessionIds, reason);
      if (!confirm) return;
      const rooms = sessionIds.map(sessionRoom);
      // Each instance handles a namespace's adapter requests in the order they were published: once it has answered
      // the chat namespace's fetch that follows the event, it has ended the sessions in every namespace, and what the
      // fetches answer is what is left (a socket that joined meanwhile). Then the lab's (on a cluster its requests
      // may travel through another shard than the event). The adapter's own timeout starts only once Redis has said
      // how many instances there are, so each wait has a deadline of its own (a Redis away would hold a sign-out
      // for over a minute).
      const leftIn = async (nsp: { name: string; in(rooms: string[]): { fetchSockets(): Promise<unknown[]> } }) => {
        try {
          return (await withTimeout(nsp.in(rooms).fetchSockets(), CONFIRM_MS)).length;
        } catch (err) {
          log?.warn({ err, nsp: nsp.name }, "the instances did not confirm the end of a session in time");
          return 0;
        }
      };
      const left = [await leftIn(io.of("/"))];
      // The lab namespace holds sockets of the session too.
      const others = [...io._nsps.values()].filter((nsp) => nsp.name !== "/");
      left.push(...(await Promise.all(others.map(leftIn))));
      if (left.some((n) => n > 0)) endEverywhere(sessionIds, reason);
    },
  };
}
