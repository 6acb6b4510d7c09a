import type { Socket } from "socket.io";
import type { Logger } from "../log.ts";
import type { SessionService } from "../sessions/sessions.service.ts";

type Next = (err?: Error) => void;

function refusal(code: "unauthorized" | "unavailable", message: string): Error {
  return Object.assign(new Error(code), { data: { code, message } });
}

/**
 * Socket.IO middleware: a connection needs a valid session (token in `auth`, bearer header or the session
 * cookie). Refused connections get `connect_error` with `message` = the error code and `data` = the typed error.
 */
export function requireSession(sessions: SessionService, log: Logger) {
  return (socket: Socket, next: Next): void => {
    const auth = socket.handshake.auth as { token?: unknown } | undefined;
    sessions
      .authenticate({
        token: auth?.token,
        authorization: socket.handshake.headers.authorization,
        cookie: socket.handshake.headers.cookie,
      })
      .then((user) => {
        if (!user) return next(refusal("unauthorized", "Sign in first."));
        (socket.data as { user?: unknown }).user = user;
        next();
      })
      .catch((err: unknown) => {
        log.error({ err, nsp: socket.nsp.name }, "socket authentication failed");
        next(refusal("unavailable", "The service is temporarily unavailable."));
      });
  };
}
