"use client";

import { createContext, useContext, useEffect, useState, type ReactNode } from "react";
import { io } from "socket.io-client";
import { useStore } from "zustand";
import { api, sessionApi } from "@/components/lib/api";
import { followNetwork } from "@/components/lib/network";
import { bindNotifications } from "@/components/notifications/notifications";
import { showFaviconCount } from "@/components/notifications/favicon";
import { createChatStore, type ChatState, type ChatStore } from "@/components/store";
import { selectShownTotal } from "@/components/store/selectors";
import { bindSocket, createSocketLink, type ChatSocket } from "@/components/store/socket-binding";

const ChatStoreContext = createContext<ChatStore | null>(null);

export function useChatStore<T>(selector: (state: ChatState) => T): T {
  const store = useContext(ChatStoreContext);
  if (!store) throw new Error("useChatStore must be used inside <ChatProvider>");
  return useStore(store, selector);
}

export function ChatProvider({ children }: { children: ReactNode }) {
  const [{ store, link }] = useState(() => {
    const link = createSocketLink(api);
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
    // Leaving the page (a reload, a link, the tab closed): a read still waiting goes now (setVisible flushes it).
    const onPageHide = () => store.getState().setVisible(false);
    sync();
    document.addEventListener("visibilitychange", sync);
    window.addEventListener("focus", onFocus);
    window.addEventListener("blur", onBlur);
    window.addEventListener("pagehide", onPageHide);
    return () => {
      window.removeEventListener("pagehide", onPageHide);
      document.removeEventListener("visibilitychange", sync);
      window.removeEventListener("focus", onFocus);
      window.removeEventListener("blur", onBlur);
    };
  }, [store]);

  useEffect(() => {
    if (userId === null) return;
    // The httpOnly session cookie authenticates the handshake. WebSocket first: it needs no sticky sessions. The
    // cookie is the browser's, not this tab's: naming the user the tab shows makes the server refuse a handshake
    // (or a reconnection) that the cookie would make for someone else, who signed in in another tab meanwhile.
    const socket: ChatSocket = io({ transports: ["websocket", "polling"], withCredentials: true, auth: { userId } });
    const unbind = bindSocket(store, link, socket);
    // HTTP calls name the user too (X-Tally-User), for the same reason.
    api.showing(userId);
    // The block list whole at every connect: pushes while disconnected are not replayed.
    store.getState().resetBlocked();
    socket.on("connect", () => {
      void api.blocks().then((res) => {
        if (res.ok) store.getState().setBlocked(res, userId);
      });
    });
    // Offline at once (the banner says so, sends wait in the queue), and a fresh attempt once back online.
    const stopFollowing = followNetwork(socket);
    // After bindSocket, so that a message is in the store before its notification is decided.
    const stopNotifications = bindNotifications({ store, socket, userId });
    return () => {
      stopFollowing();
      stopNotifications();
      unbind();
      api.showing(null);
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

  // The tab's icon shows the count too: a narrow or pinned tab shows no title.
  useEffect(() => showFaviconCount(shownCount), [shownCount]);

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
