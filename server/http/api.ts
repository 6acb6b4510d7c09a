import type { IncomingMessage, ServerResponse } from "node:http";
import type { DemoAccounts, ErrorCode, StartResponse } from "../contracts/index.ts";
import type { ConversationActions } from "../conversations/conversations.handlers.ts";
import { ANOTHER_ACCOUNT, AppError, httpStatus, parse, toApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { historyPage, type MessageDeps } from "../messages/messages.handlers.ts";
import { sessionCookie, type CookiePolicy } from "../sessions/cookies.ts";
import type { SessionActions } from "../sessions/sessions.handlers.ts";
import type { UserActions } from "../users/users.handlers.ts";
import { SESSION_TTL_MS, type Authenticated, type SessionService } from "../sessions/sessions.service.ts";
import { limitedPage, limitedSnapshot, type UnreadDeps } from "../unread/unread.handlers.ts";
import { listQuery, noInputSchema, snapshotQuery } from "../contracts/inputs.ts";
import { clientAddress, originAllowed, type TrustProxy } from "./origin.ts";

const MAX_BODY_BYTES = 64 * 1024;
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * The request's target as a URL on this server, or null when it has no path (`*`, garbage). A path ("/api/…?…")
 * is read as one: `new URL(target, base)` would read "//host/…" as another host, and throws on "//[". An
 * absolute target ("http://host/api/…", which HTTP/1.1 servers must accept) is read for its path and query.
 */
function requestUrl(target: string | undefined): URL | null {
  try {
    if (target?.startsWith("/")) return new URL(`http://localhost${target}`);
    const absolute = new URL(target ?? "");
    if (absolute.protocol !== "http:" && absolute.protocol !== "https:") return null;
    return new URL(`http://localhost${absolute.pathname}${absolute.search}`);
  } catch {
    return null;
  }
}

/** What a path answers to: each route's method, HEAD wherever GET is, and OPTIONS. */
function allowed(routes: { method: string }[]): string {
  const methods = routes.map((r) => r.method);
  if (methods.includes("GET")) methods.splice(methods.indexOf("GET") + 1, 0, "HEAD");
  return [...methods, "OPTIONS"].join(", ");
}

/** A request's query as an object, for a route's schema to check; a parameter given twice is refused, not picked. */
function query(url: URL): Record<string, string> {
  // Without a prototype, `__proto__` is a parameter like any other (and refused as unknown), not a setter.
  const out = Object.create(null) as Record<string, string>;
  for (const [key, value] of url.searchParams) {
    if (Object.hasOwn(out, key)) throw new AppError("invalid", `'${key.slice(0, 40)}' is given more than once.`);
    out[key] = value;
  }
  return out;
}

export interface ApiDeps {
  sessions: SessionService;
  accounts: SessionActions;
  conversations: ConversationActions;
  users: UserActions;
  unread: Pick<UnreadDeps, "snapshots" | "limits">;
  messages: Pick<MessageDeps, "messages" | "limits">;
  health: () => Promise<boolean>;
  log: Logger;
  cookies: CookiePolicy;
  allowedOrigins?: string[];
  trustProxy: TrustProxy;
  demo?: DemoAccounts;
  /** Whether this server runs the consistency lab (LAB=1), for the page's Lab link. */
  lab: boolean;
}

interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: string[];
  address: string;
  /** The caller's session; null on routes with `auth: "optional"` when there is none. */
  session: Authenticated | null;
}

type Route = {
  method: string;
  path: RegExp;
  auth: boolean | "optional";
  /** What the route reads besides its path: a query, a JSON body, or nothing (then either answers `invalid`). */
  takes: "query" | "body" | "nothing";
  run: (ctx: Ctx) => Promise<object>;
};

function send(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers });
  res.end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new AppError("invalid", "The request body is too large.");
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError("invalid", "The request body is not valid JSON.");
  }
}

/** A body, if any, must be declared JSON: a form post (text/plain, urlencoded, multipart) is refused. */
function jsonBodyOrNone(req: IncomingMessage): boolean {
  const type = req.headers["content-type"];
  if (type === undefined) {
    const length = req.headers["content-length"];
    return req.headers["transfer-encoding"] === undefined && (length === undefined || length === "0");
  }
  return /^application\/json\s*(;|$)/i.test(type);
}

/**
 * `X-Tally-User`: the user the calling tab shows (the web client sends it once signed in, on everything but
 * `GET /api/start`, which is how a tab learns whom the cookie names). The cookie is the browser's: a tab that missed
 * the end of its session while another tab signed someone else in must not block, start, leave or delete anything,
 * or sign anyone out, as that person.
 */
function refuseAnotherUser(req: IncomingMessage, session: Authenticated): void {
  const named = req.headers["x-tally-user"];
  if (named === undefined) return;
  if (typeof named !== "string" || !/^[1-9][0-9]{0,9}$/.test(named)) {
    throw new AppError("invalid", "X-Tally-User must be a user id.");
  }
  if (Number(named) !== session.user.id) throw new AppError("unauthorized", ANOTHER_ACCOUNT);
}

/**
 * The JSON API under /api. Every route validates its input and answers errors as
 * `{ ok: false, error: { code, message } }` with the matching HTTP status.
 */
export function createApiHandler(deps: ApiDeps): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  const signedIn = (res: ServerResponse, session: { token: string }) =>
    res.setHeader("set-cookie", sessionCookie(session.token, SESSION_TTL_MS / 1000, deps.cookies));
  const signedOut = (res: ServerResponse) => res.setHeader("set-cookie", sessionCookie("", 0, deps.cookies));
  /** A route that opens a session (sign-up, sign-in): answers it and sets its cookie. */
  const opensSession =
    (open: (body: unknown, address: string) => Promise<{ token: string }>): Route["run"] =>
    async ({ req, res, address }) => {
      const session = await open(await readJson(req), address);
      signedIn(res, session);
      return session;
    };

  // Each route parses its path and calls one behaviour; validation, limits and orchestration live there.
  const routes: Route[] = [
    {
      method: "GET",
      path: /^\/api\/health$/,
      auth: false,
      takes: "nothing",
      run: async () => {
        if (!(await deps.health())) throw new AppError("unavailable", "Redis or the database does not answer.");
        return {};
      },
    },
    {
      // Liveness: the process answers. Readiness is /api/health; a probe that restarted an instance for an outage
      // of Redis or the database would restart every instance at once and fix nothing.
      method: "GET",
      path: /^\/api\/live$/,
      auth: false,
      takes: "nothing",
      run: async () => ({}),
    },
    {
      method: "POST",
      path: /^\/api\/users$/,
      auth: false,
      takes: "body",
      run: opensSession((body, address) => deps.accounts.signUp(body, address)),
    },
    {
      method: "POST",
      path: /^\/api\/session$/,
      auth: false,
      takes: "body",
      run: opensSession((body, address) => deps.accounts.signIn(body, address)),
    },
    {
      method: "GET",
      path: /^\/api\/users$/,
      auth: true,
      takes: "query",
      run: ({ url, session }) => deps.users.lookup(session!.user, query(url)),
    },
    {
      method: "GET",
      path: /^\/api\/blocks$/,
      auth: true,
      takes: "nothing",
      run: ({ session }) => deps.users.blocked(session!.user),
    },
    {
      method: "POST",
      path: /^\/api\/blocks$/,
      auth: true,
      takes: "body",
      run: async ({ req, session }) => deps.users.block(session!.user, await readJson(req)),
    },
    {
      method: "DELETE",
      path: /^\/api\/blocks\/([^/]+)$/,
      auth: true,
      takes: "nothing",
      run: ({ params, session }) => deps.users.unblock(session!.user, params[0]),
    },
    {
      method: "GET",
      path: /^\/api\/session$/,
      auth: true,
      takes: "nothing",
      run: async ({ session }) => ({ user: session!.user }),
    },
    {
      method: "GET",
      path: /^\/api\/start$/,
      auth: "optional",
      takes: "nothing",
      run: async ({ session }): Promise<StartResponse> => ({ user: session?.user ?? null, lab: deps.lab }),
    },
    {
      method: "DELETE",
      path: /^\/api\/session$/,
      auth: "optional",
      takes: "nothing",
      run: async ({ res, session }) => {
        await deps.accounts.signOut(session);
        signedOut(res);
        return {};
      },
    },
    {
      method: "DELETE",
      path: /^\/api\/sessions$/,
      auth: true,
      takes: "nothing",
      run: async ({ res, session }) => {
        const result = await deps.accounts.signOutEverywhere(session!);
        signedOut(res);
        return result;
      },
    },
    {
      method: "GET",
      path: /^\/api\/demo$/,
      auth: false,
      takes: "nothing",
      run: async (): Promise<DemoAccounts> => deps.demo ?? { accounts: [], password: null },
    },
    {
      method: "GET",
      path: /^\/api\/conversations$/,
      auth: true,
      takes: "query",
      run: ({ url, session }) => limitedSnapshot(deps.unread, session!.user, parse(snapshotQuery, query(url)).limit),
    },
    {
      method: "GET",
      path: /^\/api\/conversations\/list$/,
      auth: true,
      takes: "query",
      run: ({ url, session }) => limitedPage(deps.unread, session!.user, parse(listQuery, query(url))),
    },
    {
      method: "POST",
      path: /^\/api\/conversations$/,
      auth: true,
      takes: "body",
      run: async ({ req, session }) => deps.conversations.create(session!.user, await readJson(req)),
    },
    {
      method: "POST",
      path: /^\/api\/conversations\/([^/]+)\/members$/,
      auth: true,
      takes: "body",
      run: async ({ req, params, session }) =>
        deps.conversations.addMembers(session!.user, params[0], await readJson(req)),
    },
    {
      method: "DELETE",
      path: /^\/api\/conversations\/([^/]+)\/members\/([^/]+)$/,
      auth: true,
      takes: "nothing",
      run: ({ params, session }) => deps.conversations.removeMember(session!.user, params[0], params[1]),
    },
    {
      method: "POST",
      path: /^\/api\/conversations\/([^/]+)\/leave$/,
      auth: true,
      takes: "nothing",
      run: ({ params, session }) => deps.conversations.leave(session!.user, params[0]),
    },
    {
      method: "DELETE",
      path: /^\/api\/conversations\/([^/]+)$/,
      auth: true,
      takes: "nothing",
      run: ({ params, session }) => deps.conversations.remove(session!.user, params[0]),
    },
    {
      method: "GET",
      path: /^\/api\/conversations\/([^/]+)\/messages$/,
      auth: true,
      takes: "query",
      run: ({ url, params, session }) => historyPage(deps.messages, session!.user, params[0], query(url)),
    },
  ];

  return async (req, res) => {
    const url = requestUrl(req.url);
    const fail = (error: { code: ErrorCode; message: string; retryAfterMs?: number }) =>
      send(
        res,
        httpStatus[error.code],
        { ok: false, error },
        error.retryAfterMs === undefined ? {} : { "retry-after": String(Math.ceil(error.retryAfterMs / 1000)) },
      );
    if (!url) {
      fail({ code: "invalid", message: "The request target is not a path." });
      return true;
    }
    if (!url.pathname.startsWith("/api/")) return false;

    const matching = routes.filter((r) => r.path.test(url.pathname));
    if (matching.length === 0) {
      fail({ code: "not_found", message: "No such endpoint." });
      return true;
    }
    // HEAD runs the GET route (its checks and limits too); Node sends the headers without the body.
    const method = req.method === "HEAD" ? "GET" : req.method;
    const route = matching.find((r) => r.method === method);
    if (!route) {
      res.setHeader("allow", allowed(matching));
      if (req.method === "OPTIONS") res.writeHead(204, { "cache-control": "no-store" }).end();
      else fail({ code: "method_not_allowed", message: `${req.method ?? "This method"} is not allowed here.` });
      return true;
    }
    if (!SAFE_METHODS.has(route.method)) {
      // CSRF: a state change is only taken from an allowed origin, and only as JSON (no form can send that).
      if (!originAllowed(req, deps.allowedOrigins, deps.trustProxy)) {
        fail({ code: "forbidden", message: "Requests from this origin are not allowed." });
        return true;
      }
      if (!jsonBodyOrNone(req)) {
        fail({ code: "unsupported_media_type", message: "Send the body as application/json." });
        return true;
      }
    }
    try {
      if (route.takes !== "query" && url.search !== "") {
        throw new AppError("invalid", "This endpoint takes no query parameters.");
      }
      let session: Authenticated | null = null;
      if (route.auth) {
        session = await deps.sessions.authenticate({
          authorization: req.headers.authorization,
          cookie: req.headers.cookie,
        });
        if (!session && route.auth === true) throw new AppError("unauthorized", "Sign in first.");
        if (session) refuseAnotherUser(req, session);
      }
      if (
        route.takes === "nothing" &&
        !SAFE_METHODS.has(route.method) &&
        !noInputSchema.safeParse(await readJson(req)).success
      ) {
        throw new AppError("invalid", "This endpoint takes no body.");
      }
      const params = route.path.exec(url.pathname)?.slice(1) ?? [];
      const address = clientAddress(req, deps.trustProxy);
      const body = await route.run({ req, res, url, params, address, session });
      send(res, 200, { ok: true, ...body });
    } catch (err) {
      const error = toApiError(err);
      // An AppError says what failed in its message; anything else is unexpected and logged.
      if (!(err instanceof AppError)) deps.log.error({ err, path: url.pathname }, "request failed");
      fail(error);
    }
    return true;
  };
}
