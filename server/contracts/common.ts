/**
 * What every contract shares: errors, results, acknowledgements, users and the data a socket carries. Types only.
 */

export type ErrorCode =
  | "invalid"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "method_not_allowed"
  | "conflict"
  | "unsupported_media_type"
  | "rate_limited"
  | "unavailable";

export interface ApiError {
  code: ErrorCode;
  message: string;
  /** With `rate_limited`: how long to wait before the same call can succeed (HTTP also sends Retry-After). */
  retryAfterMs?: number;
}

/** Every acknowledgement and every HTTP error body has this shape. */
export type Result<T extends object = object> = ({ ok: true } & T) | { ok: false; error: ApiError };

export interface UserDTO {
  id: number;
  name: string;
  /** A lab bot account (shown as a bot); absent for people. */
  bot?: true;
}

export type Ack<T extends object> = (res: Result<T>) => void;

export interface SocketData {
  user: UserDTO;
  /** The server-side session the socket was opened with; revoking it disconnects the socket. */
  sessionId: string;
  /** When that session expires (ms since the epoch): the socket is disconnected then. */
  expiresAt: number;
}
