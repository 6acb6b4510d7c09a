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
  /**
   * With `invalid` or `conflict` about one field of the input: its name as the input spells it (`name`, `password`,
   * `content`…), so that a form can mark that field and not the others. Absent when no one field is at fault.
   */
  field?: string;
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

/**
 * Why a session ended, as `session:ended` tells its sockets just before they are disconnected: `signed_out` (that
 * session signed out: another tab of the same browser, or a lab bot stopped by its owner), `signed_out_everywhere`
 * (its user signed out everywhere, from any device) or `expired`. A client shows a sentence per reason and a generic
 * one for a reason it does not know, so the list may grow.
 */
export type SessionEndReason = "signed_out" | "signed_out_everywhere" | "expired";

/** `session:ended`, in the chat's namespace and the lab's alike. */
export interface SessionEnded {
  reason: SessionEndReason;
}

export interface SocketData {
  user: UserDTO;
  /** The server-side session the socket was opened with; revoking it disconnects the socket. */
  sessionId: string;
  /** When that session expires (ms since the epoch): the socket is disconnected then. */
  expiresAt: number;
}
