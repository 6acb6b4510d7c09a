import type { Socket } from "socket.io";
import type { SessionEnded } from "../contracts/index.ts";
import type { Logger } from "../log.ts";
import { withTimeout } from "../limits/deadline.ts";
import { oneAtATime } from "../limits/turns.ts";
import type { Limits } from "../limits/limits.ts";
import { ANOTHER_ACCOUNT, AppError, RETRY_WHEN_FREED_MS } from "../errors.ts";
import type { SessionService } from "./sessions.service.ts";

type Next = (err?: Error) => void;

function refusal(code: "unauthorized" | "rate_limited" | "unavailable", message: string, retryAfterMs?: number): Error {
  return Object.assign(new Error(code), { data: { code, message, ...(retryAfterMs ? { retryAfterMs } : {}) } });
}

const overCap = (maxSockets: number) =>
  refusal("rate_limited", `At most ${maxSockets} connections per user; close a tab or device.`, RETRY_WHEN_FREED_MS);

/** How long a handshake waits for the count of the user's sockets on every instance (then it is refused). */
const COUNT_MS = 5_000;

/**
 * How many times one connection (one Engine.IO session) may ask to join a namespace. Socket.IO takes a CONNECT
 * packet as often as a client sends it, each a session look-up in the database; a client needs one per namespace and
 * one per reconnection of a namespace over a live connection. Past this the connection is closed before any look-up.
 */
export const CONNECTS_PER_CONNECTION = 8;

export interface SessionGate {
  /** How many sockets the user already holds on every instance (for the per-user cap). */
  countSockets?: (userId: number) => Promise<number>;
  maxSockets?: number;
  /**
   * Handshakes refused for want of a valid session, per address (`handshakeFailures`): once an address is over,
   * its handshakes are refused before the session look-up until the window ends.
   */
  failures?: { limits: Pick<Limits, "consume" | "refuseIfBlocked">; addressOf: (socket: Socket) => string };
}

/**
 * Socket.IO middleware: a connection needs a valid session (token in `auth`, bearer header or the session
 * cookie) and, with a cap, fewer than `maxSockets` sockets of the same user already connected. The session is
 * checked once, here; the socket then joins its session's room, and revoking the session disconnects it
 * (Notifier.sessionsEnded), so no socket event queries the database for identity. Refused connections get
 * `connect_error` with `message` = the error code and `data` = the typed error.
 */
export function requireSession(sessions: SessionService, log: Logger, gate: SessionGate = {}) {
  /**
   * A user's connections on this instance pass the cap one at a time: each is counted after the one before has
   * joined its rooms, so sockets opened all at once cannot all count the same number. Across instances they
   * still can, by one per further instance.
   */
  const inTurn = oneAtATime<number>();
  /** CONNECT packets seen per connection, and handshakes waiting for their turn per user (both bounded). */
  const connects = new WeakMap<object, number>();
  const waiting = new Map<number, number>();

  return (socket: Socket, next: Next): void => {
    const seen = (connects.get(socket.conn) ?? 0) + 1;
    connects.set(socket.conn, seen);
    if (seen > CONNECTS_PER_CONNECTION) {
      next(refusal("rate_limited", "Too many handshakes on one connection.", RETRY_WHEN_FREED_MS));
      socket.conn.close();
      return;
    }
    const { failures } = gate;
    const address = failures?.addressOf(socket);
    if (failures && address !== undefined) {
      try {
        failures.limits.refuseIfBlocked("handshakeFailures", { address });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        return next(refusal("rate_limited", err.message, err.retryAfterMs));
      }
    }
    const auth = socket.handshake.auth as { token?: unknown; userId?: unknown } | undefined;
    sessions
      .authenticate({
        token: auth?.token,
        authorization: socket.handshake.headers.authorization,
        cookie: socket.handshake.headers.cookie,
      })
      .then(async (session) => {
        if (!session) {
          // Counted, and past the limit the address's next handshakes are refused before their look-up; this one
          // was looked up, so it still answers what it found.
          if (failures && address !== undefined) {
            await failures.limits.consume("handshakeFailures", { address }).catch((err: unknown) => {
              if (!(err instanceof AppError)) throw err;
            });
          }
          return next(refusal("unauthorized", "Sign in first."));
        }
        // A tab names the user it shows. The cookie it sends is the browser's, and another tab may have signed
        // another person in since this tab last connected (it was offline when its session ended): its socket must
        // not read, send or count for someone it does not show. Not a guess at a session, so not counted above.
        if (typeof auth?.userId === "number" && auth.userId !== session.user.id) {
          return next(refusal("unauthorized", ANOTHER_ACCOUNT));
        }
        const admit = () => {
          const data = socket.data as { user?: unknown; sessionId?: unknown; expiresAt?: unknown };
          data.user = session.user;
          data.sessionId = session.sessionId;
          data.expiresAt = session.expiresAt.getTime();
          next();
        };
        const { countSockets, maxSockets } = gate;
        if (!countSockets || maxSockets === undefined) return admit();
        // More handshakes of one user waiting here than the cap admits would all be refused: refused now, so a
        // flood of them holds no memory while it waits.
        const ahead = waiting.get(session.user.id) ?? 0;
        if (ahead >= maxSockets) {
          return next(overCap(maxSockets));
        }
        waiting.set(session.user.id, ahead + 1);
        const done = () => {
          const left = (waiting.get(session.user.id) ?? 1) - 1;
          if (left > 0) waiting.set(session.user.id, left);
          else waiting.delete(session.user.id);
        };
        await inTurn(session.user.id, async () => {
          // A client that gave up while it waited is not counted (Socket.IO ignores a `next` for it).
          if (socket.conn.readyState !== "open") return next(refusal("unavailable", "The connection closed."));
          // The adapter's own timeout starts only once Redis has said how many instances there are.
          if ((await withTimeout(countSockets(session.user.id), COUNT_MS)) >= maxSockets) {
            next(overCap(maxSockets));
            return;
          }
          admit();
          // Socket.IO connects the socket (and its handler joins the user's room) on the next tick after `next()`
          // when this gate is the namespace's last middleware, as it is on both: the turn ends after that, so the
          // next connection counts this one. (A middleware added after it would have to keep that true.)
          await new Promise<void>((resolve) => process.nextTick(resolve));
        }).finally(done);
      })
      .catch((err: unknown) => {
        log.error({ err, nsp: socket.nsp.name }, "socket authentication failed");
        next(refusal("unavailable", "The service is temporarily unavailable."));
      });
  };
}

/** The longest delay a Node timer takes (about 24.8 days); a session lasts 30, so the timer is set again. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Disconnects a connected socket when its session expires, as a revocation would, saying why first
 * (`session:ended`, `expired`): an expired session answers 401 on HTTP, and its sockets must not outlive it. Called
 * once the socket is connected (its `disconnect` clears it).
 */
export function endAtExpiry(socket: Socket, now: () => number = Date.now): void {
  const { expiresAt } = socket.data as { expiresAt: number };
  let timer: NodeJS.Timeout | undefined;
  const check = () => {
    const left = expiresAt - now();
    if (left <= 0) {
      socket.emit("session:ended", { reason: "expired" } satisfies SessionEnded);
      socket.disconnect(true);
      return;
    }
    timer = setTimeout(check, Math.min(left, MAX_TIMER_MS));
    timer.unref();
  };
  socket.once("disconnect", () => clearTimeout(timer));
  check();
}

/**
 * Joins a connected socket to `rooms` (its user's and its session's), then looks its session up once more: a
 * revocation that ran after the gate's look-up and before this join broadcast to a session room the socket was not
 * in yet, so it missed the socket, which would stay connected until an instance's sweep. Found revoked (or expired)
 * once joined, the socket is disconnected; a revocation after the join reaches it through the room. One look-up per
 * connection, none per event.
 */
export async function joinSessionRooms(
  socket: Socket,
  rooms: string[],
  sessions: Pick<SessionService, "stillValid">,
  log: Logger,
): Promise<void> {
  const { sessionId } = socket.data as { sessionId: string };
  try {
    await socket.join(rooms);
    if (!(await sessions.stillValid([sessionId])).has(sessionId)) socket.disconnect(true);
  } catch (err) {
    // Not known to be valid: dropped, as a revocation would; the client reconnects and is asked again.
    log.warn({ err, nsp: socket.nsp.name }, "could not confirm a new socket's session; disconnecting it");
    socket.disconnect(true);
  }
}
