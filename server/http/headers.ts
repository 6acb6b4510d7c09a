import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import helmet from "helmet";

const nonces = new WeakMap<ServerResponse, string>();

/**
 * Security headers for every response, by helmet: a Content-Security-Policy whose scripts need a per-request
 * nonce ('strict-dynamic' lets Next.js' own chunks load), frame-ancestors 'none' and X-Frame-Options DENY,
 * nosniff, a strict Referrer-Policy, and HSTS only behind HTTPS. Styles may be inline (React and the charts
 * set style attributes); scripts may not. Dev mode adds 'unsafe-eval' for React's refresh runtime.
 */
export function createSecurityHeaders({ hsts, dev }: { hsts: boolean; dev: boolean }) {
  const apply = helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: [
          (_req: IncomingMessage, res: ServerResponse) => `'nonce-${nonces.get(res) ?? ""}'`,
          "'strict-dynamic'",
          ...(dev ? ["'unsafe-eval'"] : []),
        ],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", "data:", "blob:"],
        fontSrc: ["'self'", "data:"],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        manifestSrc: ["'self'"],
        workerSrc: ["'self'"],
      },
    },
    crossOriginEmbedderPolicy: false,
    frameguard: { action: "deny" },
    referrerPolicy: { policy: "strict-origin-when-cross-origin" },
    strictTransportSecurity: hsts ? { maxAge: 31_536_000, includeSubDomains: true } : false,
  });

  /**
   * Sets the headers on `res` and hands the policy to Next.js through the request: Next reads the nonce from the
   * request's Content-Security-Policy header and puts it on every script it renders.
   */
  return function securityHeaders(req: IncomingMessage, res: ServerResponse): Promise<void> {
    nonces.set(res, randomBytes(16).toString("base64"));
    return new Promise((resolve, reject) => {
      apply(req as never, res as never, (err?: unknown) => {
        if (err) return reject(err instanceof Error ? err : new Error(String(err)));
        const policy = res.getHeader("content-security-policy");
        if (typeof policy === "string") req.headers["content-security-policy"] = policy;
        resolve();
      });
    });
  };
}

/**
 * The headers of Socket.IO's own HTTP answers (long-polling and the WebSocket upgrade), which never reach the request
 * handler above: the same helmet, with a policy for an answer that is never a page (`default-src 'none'`). Read
 * once from helmet, by a response that records what it sets; engine.io adds them to each answer (its `headers`
 * event).
 */
export function socketHeaders({ hsts }: { hsts: boolean }): Record<string, string> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader: (name: string, value: unknown) => (headers[name.toLowerCase()] = String(value)),
    removeHeader: (name: string) => delete headers[name.toLowerCase()],
  };
  helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    frameguard: { action: "deny" },
    referrerPolicy: { policy: "strict-origin-when-cross-origin" },
    strictTransportSecurity: hsts ? { maxAge: 31_536_000, includeSubDomains: true } : false,
  })({} as never, recorder as never, () => {});
  return headers;
}
