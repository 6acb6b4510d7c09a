import type { Socket } from "socket.io-client";

/**
 * Makes a page's socket follow the browser's network at once. The browser knows when the network goes; Engine.IO
 * closes the transport on "offline" itself, except for a server on localhost (where the demo and workshops run),
 * which then noticed only when a ping went unanswered (some 45 s). Closed here too, so the page says offline at once;
 * Socket.IO reconnects by itself (at once where no network was needed after all). The transport, not the engine: an
 * engine with writes buffered would wait for them to drain first. Online: a fresh attempt now, not after the
 * reconnection backoff. Returns the function that stops following.
 */
export function followNetwork(socket: Pick<Socket, "connected" | "io" | "disconnect">): () => void {
  const onOffline = () => {
    if (socket.connected) socket.io.engine?.transport?.close();
  };
  const onOnline = () => {
    if (!socket.connected) socket.disconnect().connect();
  };
  window.addEventListener("offline", onOffline);
  window.addEventListener("online", onOnline);
  return () => {
    window.removeEventListener("offline", onOffline);
    window.removeEventListener("online", onOnline);
  };
}
