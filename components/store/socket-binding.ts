import type { Socket } from "socket.io-client";
import type { ClientToServerEvents, ServerToClientEvents } from "@/server/contracts";
import { whenConnected } from "@/components/lib/when-connected";
import type { ChatStore } from "./index";
import type { ChatTransport } from "./types";

/**
 * The socket half of the client: the transport the store sends through and the binding that turns socket events
 * into store actions. Plain TypeScript, so the page (components/providers/ChatProvider.tsx) and the model-based
 * simulation (server/testing/sim) run the same code; only how the socket is opened differs (cookie or token).
 */

export type ChatSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

export const ACK_TIMEOUT_MS = 5000;
export const RECONNECT_DELAY_MS = 2000;

const NOT_CONNECTED = { ok: false, error: { code: "unavailable", message: "Not connected to the server." } } as const;

/** What the transport does over HTTP (the page's api client). */
export type HttpTransport = Pick<
  ChatTransport,
  "fetchMessages" | "createConversation" | "addMembers" | "removeMember" | "leaveConversation" | "deleteConversation"
>;

export interface SocketLink {
  transport: ChatTransport;
  attach(socket: ChatSocket): void;
  detach(socket: ChatSocket): void;
}

/**
 * The store is created once per page but the socket lives only while someone is signed in, so the transport
 * reaches the socket through this link instead of capturing one.
 */
export function createSocketLink(http: HttpTransport): SocketLink {
  let socket: ChatSocket | null = null;

  function connected(): Promise<ChatSocket> {
    return socket ? whenConnected(socket, ACK_TIMEOUT_MS) : Promise.reject(new Error("no socket"));
  }

  const transport: ChatTransport = {
    async send(input) {
      if (!socket) return NOT_CONNECTED;
      const ready = await connected();
      return ready.timeout(ACK_TIMEOUT_MS).emitWithAck("message:send", input);
    },
    async deleteMessage(input) {
      if (!socket?.connected) throw new Error("not connected");
      return socket.timeout(ACK_TIMEOUT_MS).emitWithAck("message:delete", input);
    },
    async read(input) {
      if (!socket?.connected) throw new Error("not connected");
      return socket.timeout(ACK_TIMEOUT_MS).emitWithAck("conversation:read", input);
    },
    async mute(input) {
      if (!socket?.connected) throw new Error("not connected");
      return socket.timeout(ACK_TIMEOUT_MS).emitWithAck("conversation:mute", input);
    },
    async markUnread(input) {
      if (!socket?.connected) throw new Error("not connected");
      return socket.timeout(ACK_TIMEOUT_MS).emitWithAck("conversation:markUnread", input);
    },
    async sync(limit) {
      // A reconnect syncs anyway; a sync buffered while offline would only be superseded.
      if (!socket?.connected) throw new Error("not connected");
      return socket.timeout(ACK_TIMEOUT_MS).emitWithAck("sync", { limit });
    },
    async listConversations(input) {
      if (!socket?.connected) throw new Error("not connected");
      return socket.timeout(ACK_TIMEOUT_MS).emitWithAck("conversation:list", input);
    },
    fetchMessages: http.fetchMessages,
    createConversation: http.createConversation,
    addMembers: http.addMembers,
    removeMember: http.removeMember,
    leaveConversation: http.leaveConversation,
    deleteConversation: http.deleteConversation,
  };

  return {
    transport,
    attach(next) {
      socket = next;
    },
    detach(old) {
      if (socket === old) socket = null;
    },
  };
}

/**
 * Puts `socket` behind `link` and turns its events into actions of `store`. Returns the teardown, which also
 * disconnects the socket. socket.io reconnects by itself after a lost connection; after a refused handshake or a
 * server-side disconnect it does not, so this reconnects unless the session has ended.
 */
export function bindSocket(
  store: ChatStore,
  link: SocketLink,
  socket: ChatSocket,
  options: { reconnectDelayMs?: number } = {},
): () => void {
  const reconnectDelayMs = options.reconnectDelayMs ?? RECONNECT_DELAY_MS;
  link.attach(socket);
  let closed = false;
  let retry: ReturnType<typeof setTimeout> | undefined;

  const reconnectUnlessSignedOut = async () => {
    const valid = await store.getState().verifySession();
    if (closed || !valid) return;
    clearTimeout(retry);
    retry = setTimeout(() => {
      if (!closed && !socket.connected) socket.connect();
    }, reconnectDelayMs);
  };

  socket.on("connect", () => store.getState().handleConnected());
  socket.on("disconnect", (reason) => {
    store.getState().handleDisconnected();
    if (reason === "io server disconnect") void reconnectUnlessSignedOut();
  });
  socket.on("connect_error", () => {
    if (!socket.active) void reconnectUnlessSignedOut();
  });
  socket.on("message:new", ({ message }) => store.getState().receiveMessage(message));
  socket.on("message:deleted", ({ message }) => store.getState().receiveDeleted(message));
  socket.on("unread:changed", (update) => store.getState().applyUnread(update));
  socket.on("conversation:created", ({ conversation }) => store.getState().receiveConversation(conversation));
  socket.on("conversation:updated", ({ conversation, change }) =>
    store.getState().updateConversation(conversation, change),
  );
  socket.on("conversation:removed", ({ conversationId, how }) =>
    store.getState().removeConversation(conversationId, how),
  );
  socket.on("unread:stale", () => store.getState().handleStale());
  socket.on("blocks:changed", (list) => store.getState().setBlocked(list));
  // Comes just before the server drops the socket; the disconnect then asks whether the session is gone. The store
  // checks the reason (a newer server may send one this client does not know).
  socket.on("session:ended", (payload) => store.getState().handleSessionEnded(payload?.reason));

  return () => {
    closed = true;
    clearTimeout(retry);
    link.detach(socket);
    socket.removeAllListeners();
    socket.disconnect();
    store.getState().handleDisconnected();
  };
}
