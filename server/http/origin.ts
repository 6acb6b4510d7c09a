import type { IncomingMessage } from "node:http";

/**
 * Whether a request comes from an allowed origin. Browsers send `Origin` on every WebSocket handshake and every
 * non-GET request, so a request without one is not a cross-site browser request (curl, the bots, tests) and is
 * let through; `Origin: null` (sandboxed frames, file:) is refused. Without an allow-list the only allowed
 * origin is the one the request was addressed to: its Host header and, behind a trusted proxy that says it
 * (`X-Forwarded-Proto`), its scheme, so a page on http://host cannot act on https://host. A server that is not
 * told its scheme cannot check it: behind TLS without such a proxy, set the allow-list (docs/security.md).
 */
export function originAllowed(req: IncomingMessage, allowed: string[] | undefined, trustProxy = false): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return req.headers["sec-fetch-site"] !== "cross-site";
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  if (allowed) return allowed.includes(parsed.origin);
  if (parsed.host !== req.headers.host) return false;
  const scheme = trustProxy ? lastHop(req.headers["x-forwarded-proto"])?.toLowerCase() : undefined;
  if (scheme !== undefined) return parsed.protocol === `${scheme}:`;
  return parsed.protocol === "http:" || parsed.protocol === "https:";
}

/** The last value of a header a proxy appends to (`a, b` or repeated): the one the nearest proxy wrote. */
function lastHop(header: string | string[] | undefined): string | undefined {
  return (Array.isArray(header) ? header.at(-1) : header)?.split(",").at(-1)?.trim() || undefined;
}

/** The client's address: the socket peer, or behind a trusted proxy the last X-Forwarded-For hop. */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const last = lastHop(req.headers["x-forwarded-for"]);
    if (last) return last;
  }
  return req.socket.remoteAddress ?? "unknown";
}
