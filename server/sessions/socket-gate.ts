import type { Socket } from "socket.io";
import type { Logger } from "../log.ts";
import type { SessionService } from "./sessions.service.ts";

type Next = (err?: Error) => void;

function refusal(code: "unauthorized" | "rate_limited" | "unavailable", message: string): Error {
  return Object.assign(new Error(code), { data: { code, message } });
}

export interface SessionGate {
  /** How many sockets the user already holds on every instance (for the per-user cap). */
  countSockets?: (userId: number) => Promise<number>;
  maxSockets?: number;
}

/**
 * Socket.IO middleware: a connection needs a valid session (token in `auth`, bearer header or the session
 * cookie) and, with a cap, fewer than `maxSockets` sockets of the same user already connected. The session is
 * checked once, here; the socket then joins its session's room, and revoking the session disconnects it
 * (Notifier.sessionsEnded), so no socket event queries the database for identity. Refused connections get
 * `connect_error` with `message` = the error code and `data` = the typed error.
 */
export function requireSession(sessions: SessionService, log: Logger, gate: SessionGate = {}) {
  return (socket: Socket, next: Next): void => {
    const auth = socket.handshake.auth as { token?: unknown } | undefined;
    sessions
      .authenticate({
        token: auth?.token,
        authorization: socket.handshake.headers.authorization,
        cookie: socket.handshake.headers.cookie,
      })
      .then(async (session) => {
        if (!session) return next(refusal("unauthorized", "Sign in first."));
        if (gate.countSockets && gate.maxSockets !== undefined) {
          const count = await gate.countSockets(session.user.id);
          if (count >= gate.maxSockets) {
            return next(
              refusal("rate_limited", `At most ${gate.maxSockets} connections per user; close a tab or device.`),
            );
          }
        }
        const data = socket.data as { user?: unknown; sessionId?: unknown };
        data.user = session.user;
        data.sessionId = session.sessionId;
        next();
      })
      .catch((err: unknown) => {
        log.error({ err, nsp: socket.nsp.name }, "socket authentication failed");
        next(refusal("unavailable", "The service is temporarily unavailable."));
      });
  };
}
