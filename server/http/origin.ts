import type { IncomingMessage } from "node:http";
import ipaddr from "ipaddr.js";

/**
 * Which peers are reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed: none, any (an
 * instance only a proxy can reach), or these addresses and CIDR ranges (`TRUST_PROXY=10.0.0.5,10.1.0.0/16`): with
 * "any", a client that reaches an instance's port directly picks its own address, and with it the per-address
 * limits' key (an operator's walkthrough: unlimited password guesses).
 */
export type TrustProxy = boolean | readonly string[];

/** Whether `req` came through a trusted proxy. */
export function fromTrustedProxy(req: IncomingMessage, trustProxy: TrustProxy): boolean {
  if (typeof trustProxy === "boolean") return trustProxy;
  const peer = req.socket.remoteAddress;
  if (!peer || !ipaddr.isValid(peer)) return false;
  const address = ipaddr.process(peer);
  return trustProxy.some((entry) => {
    if (!entry.includes("/")) return ipaddr.process(entry).toString() === address.toString();
    const [range, bits] = ipaddr.parseCIDR(entry);
    return address.kind() === range.kind() && address.match(range, bits);
  });
}

/** A TRUST_PROXY entry: an address or a CIDR range. */
export function isProxyEntry(entry: string): boolean {
  return ipaddr.isValidCIDR(entry) || ipaddr.isValid(entry);
}

/**
 * Whether a request comes from an allowed origin. Browsers send `Origin` on every WebSocket handshake and every
 * non-GET request, so a request without one is not a cross-site browser request (curl, the bots, tests) and is
 * let through; `Origin: null` (sandboxed frames, file:) is refused. Without an allow-list the only allowed
 * origin is the one the request was addressed to: its Host header and, behind a trusted proxy that says it
 * (`X-Forwarded-Proto`), its scheme, so a page on http://host cannot act on https://host. A server that is not
 * told its scheme cannot check it: behind TLS without such a proxy, set the allow-list (docs/security.md).
 */
export function originAllowed(
  req: IncomingMessage,
  allowed: string[] | undefined,
  trustProxy: TrustProxy = false,
): boolean {
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
  const scheme = fromTrustedProxy(req, trustProxy)
    ? lastHop(req.headers["x-forwarded-proto"])?.toLowerCase()
    : undefined;
  if (scheme !== undefined) return parsed.protocol === `${scheme}:`;
  return parsed.protocol === "http:" || parsed.protocol === "https:";
}

/** The last value of a header a proxy appends to (`a, b` or repeated): the one the nearest proxy wrote. */
function lastHop(header: string | string[] | undefined): string | undefined {
  return (Array.isArray(header) ? header.at(-1) : header)?.split(",").at(-1)?.trim() || undefined;
}

/** The client's address: the socket peer, or behind a trusted proxy the last X-Forwarded-For hop. */
export function clientAddress(req: IncomingMessage, trustProxy: TrustProxy): string {
  if (fromTrustedProxy(req, trustProxy)) {
    const last = lastHop(req.headers["x-forwarded-for"]);
    if (last) return last;
  }
  return req.socket.remoteAddress ?? "unknown";
}
