/** The part of a socket.io client socket that `whenConnected` needs (a test passes a plain emitter). */
export interface Connectable {
  readonly connected: boolean;
  once(event: "connect", listener: () => void): unknown;
  off(event: "connect", listener: () => void): unknown;
}

/**
 * Resolves with `socket` once it is connected (at once if it is), or rejects after `ms`. A command issued while a
 * page's socket is still connecting (a click right after the page loads) waits for it instead of failing; and
 * waiting here rather than letting socket.io buffer the emit keeps a command reported as failed from being
 * delivered later by the buffer.
 */
export function whenConnected<S extends Connectable>(socket: S, ms: number): Promise<S> {
  if (socket.connected) return Promise.resolve(socket);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.off("connect", onConnect);
      reject(new Error("not connected"));
    }, ms);
    function onConnect() {
      clearTimeout(timer);
      resolve(socket);
    }
    socket.once("connect", onConnect);
  });
}
