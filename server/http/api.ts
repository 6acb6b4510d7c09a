import type { IncomingMessage, ServerResponse } from "node:http";
import type { ErrorCode, UserDTO } from "../contracts/index.ts";
import { createConversation } from "../conversations/conversations.handlers.ts";
import type { ConversationService } from "../conversations/conversations.service.ts";
import { AppError, httpStatus, toApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { Delivery } from "../messages/delivery.ts";
import type { MessageService } from "../messages/messages.service.ts";
import type { Notifier } from "../realtime/notifier.ts";
import type { SessionService } from "../sessions/sessions.service.ts";
import { SESSION_COOKIE, SESSION_MAX_AGE_S } from "../sessions/token.ts";
import { conversationIdParam, historyQuery, parse, signInInput } from "../validation.ts";

const MAX_BODY_BYTES = 64 * 1024;

export interface ApiDeps {
  sessions: SessionService;
  conversations: ConversationService;
  messages: MessageService;
  notifier: Notifier;
  delivery: Delivery;
  health: () => Promise<boolean>;
  log: Logger;
  secureCookies: boolean;
}

interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: string[];
}

type Route = { method: string; path: RegExp; auth: boolean; run: (ctx: Ctx, user: UserDTO) => Promise<object> };

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

function cookie(value: string, maxAge: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure ? "; Secure" : ""}`;
}

/**
 * The JSON API under /api. Every route validates its input and answers errors as
 * `{ ok: false, error: { code, message } }` with the matching HTTP status.
 */
export function createApiHandler(deps: ApiDeps): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  const routes: Route[] = [
    {
      method: "POST",
      path: /^\/api\/session$/,
      auth: false,
      run: async ({ req, res }) => {
        const { name } = parse(signInInput, await readJson(req));
        const session = await deps.sessions.signIn(name);
        res.setHeader("set-cookie", cookie(session.token, SESSION_MAX_AGE_S, deps.secureCookies));
        return session;
      },
    },
    { method: "GET", path: /^\/api\/session$/, auth: true, run: async (_ctx, user) => ({ user }) },
    {
      method: "DELETE",
      path: /^\/api\/session$/,
      auth: false,
      run: async ({ res }) => {
        res.setHeader("set-cookie", cookie("", 0, deps.secureCookies));
        return {};
      },
    },
    {
      method: "GET",
      path: /^\/api\/conversations$/,
      auth: true,
      run: (_ctx, user) => deps.conversations.snapshot(user),
    },
    {
      method: "POST",
      path: /^\/api\/conversations$/,
      auth: true,
      run: async ({ req }, user) => createConversation(deps, user, await readJson(req)),
    },
    {
      method: "POST",
      path: /^\/api\/conversations\/([^/]+)\/leave$/,
      auth: true,
      run: async ({ params }, user) => {
        const conversationId = parse(conversationIdParam, params[0]);
        const remaining = await deps.conversations.leave(user, conversationId);
        await deps.delivery.deliverRemoval(conversationId, [user.id]);
        // The others' member lists (and an untitled group's title) change; their counts do not.
        await Promise.all(
          remaining.map(async (memberId) =>
            deps.notifier.conversationUpdated(memberId, await deps.conversations.describe(conversationId, memberId)),
          ),
        );
        return {};
      },
    },
    {
      method: "DELETE",
      path: /^\/api\/conversations\/([^/]+)$/,
      auth: true,
      run: async ({ params }, user) => {
        const conversationId = parse(conversationIdParam, params[0]);
        await deps.delivery.deliverRemoval(conversationId, await deps.conversations.remove(user, conversationId));
        return {};
      },
    },
    {
      method: "GET",
      path: /^\/api\/conversations\/([^/]+)\/messages$/,
      auth: true,
      run: async ({ url, params }, user) => {
        const conversationId = parse(conversationIdParam, params[0]);
        const page = parse(historyQuery, Object.fromEntries(url.searchParams));
        return { messages: await deps.messages.history(user, conversationId, page) };
      },
    },
  ];

  return async (req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (!url.pathname.startsWith("/api/")) return false;
    const fail = (code: ErrorCode, message: string) =>
      send(res, httpStatus[code], { ok: false, error: { code, message } });

    if (url.pathname === "/api/health") {
      const ok = await deps.health();
      send(
        res,
        ok ? 200 : 503,
        ok
          ? { ok: true }
          : { ok: false, error: { code: "unavailable", message: "Redis or the database does not answer." } },
      );
      return true;
    }

    const matching = routes.filter((r) => r.path.test(url.pathname));
    const route = matching.find((r) => r.method === req.method);
    if (!route) {
      if (matching.length > 0) res.setHeader("allow", matching.map((r) => r.method).join(", "));
      fail(
        matching.length > 0 ? "invalid" : "not_found",
        matching.length > 0 ? `${req.method} is not allowed here.` : "No such endpoint.",
      );
      return true;
    }
    try {
      let user: UserDTO | null = null;
      if (route.auth) {
        user = await deps.sessions.authenticate({
          authorization: req.headers.authorization,
          cookie: req.headers.cookie,
        });
        if (!user) throw new AppError("unauthorized", "Sign in first.");
      }
      const params = route.path.exec(url.pathname)?.slice(1) ?? [];
      const body = await route.run({ req, res, url, params }, user as UserDTO);
      send(res, 200, { ok: true, ...body });
    } catch (err) {
      const error = toApiError(err);
      if (error.code === "unavailable") deps.log.error({ err, path: url.pathname }, "request failed");
      fail(error.code, error.message);
    }
    return true;
  };
}
