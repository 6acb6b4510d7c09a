import type { IncomingMessage } from "node:http";

/**
 * Whether a request comes from an allowed origin. Browsers send `Origin` on every WebSocket handshake and every
 * non-GET request, so a request without one is not a cross-site browser request (curl, the bots, tests) and is
 * let through; `Origin: null` (sandboxed frames, file:) is refused. Without an allow-list the only allowed
 * origin is the one the request was addressed to (its Host header).
 */
export function originAllowed(req: IncomingMessage, allowed: string[] | undefined): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return req.headers["sec-fetch-site"] !== "cross-site";
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  if (allowed) return allowed.includes(parsed.origin);
  return parsed.host === req.headers.host && (parsed.protocol === "http:" || parsed.protocol === "https:");
}

/** The client's address: the socket peer, or behind a trusted proxy the last X-Forwarded-For hop. */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = req.headers["x-forwarded-for"];
    const last = (Array.isArray(forwarded) ? forwarded.at(-1) : forwarded)?.split(",").at(-1)?.trim();
    if (last) return last;
  }
  return req.socket.remoteAddress ?? "unknown";
}
