"use client";

import { createContext, useContext, useEffect, useState, type ReactNode } from "react";
import { io, type Socket } from "socket.io-client";
import { useStore } from "zustand";
import type { ClientToServerEvents, ServerToClientEvents } from "@/server/contracts";
import { api, sessionApi } from "@/components/lib/api";
import { createChatStore, type ChatState, type ChatStore, type ChatTransport } from "@/components/store";
import { selectShownTotal } from "@/components/store/selectors";

type ChatSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

const ACK_TIMEOUT_MS = 5000;
const RECONNECT_DELAY_MS = 2000;

const NOT_CONNECTED = { ok: false, error: { code: "unavailable", message: "Not connected to the server." } } as const;

/**
 * The store is created once per provider but the socket lives only while someone is signed in, so the
 * transport reaches the socket through this link instead of capturing one.
 */
function createSocketLink() {
  let socket: ChatSocket | null = null;

  function connected(): Promise<ChatSocket> {
    const current: ChatSocket | null = socket;
    if (!current) return Promise.reject(new Error("no socket"));
    const waiting: ChatSocket = current;
    if (current.connected) return Promise.resolve(current);
    // Waiting here instead of letting socket.io buffer the emit keeps a message we reported as failed from
    // being delivered later by the buffer.
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiting.off("connect", onConnect);
        reject(new Error("not connected"));
      }, ACK_TIMEOUT_MS);
      function onConnect() {
        clearTimeout(timer);
        resolve(waiting);
      }
      waiting.once("connect", onConnect);
    });
  }

  const transport: ChatTransport = {
    async send(input) {
      if (!socket) return NOT_CONNECTED;
      const ready = await connected();
      return ready.timeout(ACK_TIMEOUT_MS).emitWithAck("message:send", input);
    },
    async read(input) {
      if (!socket?.connected) throw new Error("not connected");
      return socket.timeout(ACK_TIMEOUT_MS).emitWithAck("conversation:read", input);
    },
    async sync() {
      // A reconnect syncs anyway; a sync buffered while offline would only be superseded.
      if (!socket?.connected) throw new Error("not connected");
      return socket.timeout(ACK_TIMEOUT_MS).emitWithAck("sync");
    },
    fetchMessages: api.fetchMessages,
    createConversation: api.createConversation,
    leaveConversation: api.leaveConversation,
    deleteConversation: api.deleteConversation,
  };

  return {
    transport,
    attach(next: ChatSocket) {
      socket = next;
    },
    detach(old: ChatSocket) {
      if (socket === old) socket = null;
    },
  };
}

const ChatStoreContext = createContext<ChatStore | null>(null);

export function useChatStore<T>(selector: (state: ChatState) => T): T {
  const store = useContext(ChatStoreContext);
  if (!store) throw new Error("useChatStore must be used inside <ChatProvider>");
  return useStore(store, selector);
}

export function ChatProvider({ children }: { children: ReactNode }) {
  const [{ store, link }] = useState(() => {
    const link = createSocketLink();
    return { link, store: createChatStore({ transport: link.transport, session: sessionApi }) };
  });
  const userId = useStore(store, (s) => s.user?.id ?? null);
  const signedIn = useStore(store, (s) => s.sessionStatus === "signedIn");
  const totalUnread = useStore(store, selectShownTotal);

  useEffect(() => {
    void store.getState().restoreSession();
  }, [store]);

  useEffect(() => {
    const sync = () => {
      store.getState().setVisible(document.visibilityState === "visible");
      store.getState().setFocused(document.hasFocus());
    };
    const onFocus = () => store.getState().setFocused(true);
    const onBlur = () => store.getState().setFocused(false);
    sync();
    document.addEventListener("visibilitychange", sync);
    window.addEventListener("focus", onFocus);
    window.addEventListener("blur", onBlur);
    return () => {
      document.removeEventListener("visibilitychange", sync);
      window.removeEventListener("focus", onFocus);
      window.removeEventListener("blur", onBlur);
    };
  }, [store]);

  useEffect(() => {
    if (userId === null) return;
    // The httpOnly session cookie authenticates the handshake. WebSocket first: it needs no sticky sessions.
    const socket: ChatSocket = io({ transports: ["websocket", "polling"], withCredentials: true });
    link.attach(socket);
    let closed = false;
    let retry: ReturnType<typeof setTimeout> | undefined;

    // socket.io does not reconnect by itself after a refused handshake or a server-side disconnect.
    const reconnectUnlessSignedOut = async () => {
      const valid = await store.getState().verifySession();
      if (closed || !valid) return;
      clearTimeout(retry);
      retry = setTimeout(() => {
        if (!closed && !socket.connected) socket.connect();
      }, RECONNECT_DELAY_MS);
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
    socket.on("unread:changed", (update) => store.getState().applyUnread(update));
    socket.on("conversation:created", ({ conversation }) => store.getState().receiveConversation(conversation));
    socket.on("conversation:updated", ({ conversation }) => store.getState().updateConversation(conversation));
    socket.on("conversation:removed", ({ conversationId }) => store.getState().removeConversation(conversationId));
    socket.on("unread:stale", () => store.getState().handleStale());

    return () => {
      closed = true;
      clearTimeout(retry);
      link.detach(socket);
      socket.removeAllListeners();
      socket.disconnect();
      store.getState().handleDisconnected();
    };
  }, [userId, store, link]);

  const shownCount = signedIn ? totalUnread : 0;

  useEffect(() => {
    const title = shownCount > 0 ? `(${shownCount}) Tally` : "Tally";
    document.title = title;
    // Next.js owns <title> too (metadata); should it write it again, the count must win.
    const keepTitle = new MutationObserver(() => {
      if (document.title !== title) document.title = title;
    });
    keepTitle.observe(document.head, { childList: true, subtree: true, characterData: true });
    return () => keepTitle.disconnect();
  }, [shownCount]);

  useEffect(() => {
    if (!("setAppBadge" in navigator) || !("clearAppBadge" in navigator)) return;
    // Badging is best effort: browsers refuse it outside installed apps or without permission.
    try {
      const badge = shownCount > 0 ? navigator.setAppBadge(shownCount) : navigator.clearAppBadge();
      badge.catch(() => undefined);
    } catch {
      // Same as above, for browsers that throw instead of rejecting.
    }
  }, [shownCount]);

  return <ChatStoreContext.Provider value={store}>{children}</ChatStoreContext.Provider>;
}
