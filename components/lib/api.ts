import type {
  AddMembersInput,
  ApiError,
  BlockList,
  ConversationDTO,
  CreateConversationInput,
  Credentials,
  DemoAccounts,
  ErrorCode,
  MessagesResponse,
  Result,
  SessionResponse,
  StartResponse,
  UserDTO,
  UserLookup,
} from "@/server/contracts";
import type { MessagesQuery, SessionTransport } from "@/components/store";

const CODE_BY_STATUS: Partial<Record<number, ErrorCode>> = {
  400: "invalid",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  409: "conflict",
  415: "unsupported_media_type",
  429: "rate_limited",
  503: "unavailable",
};

function errorOf(body: unknown): (Partial<ApiError> & { message: string }) | null {
  if (typeof body !== "object" || body === null || !("error" in body)) return null;
  const error = body.error;
  if (typeof error !== "object" || error === null || !("message" in error) || typeof error.message !== "string") {
    return null;
  }
  const code = "code" in error && typeof error.code === "string" ? (error.code as ErrorCode) : undefined;
  const field = "field" in error && typeof error.field === "string" ? error.field : undefined;
  return field === undefined ? { code, message: error.message } : { code, message: error.message, field };
}

/** The `fetch` the client sends with: the browser's own, or (outside a browser) one that adds what a page would. */
export type Fetch = (path: string, init: RequestInit) => Promise<Response>;

/**
 * Same-origin JSON request that never throws: the session cookie rides along, and every failure (HTTP error,
 * network down, non-JSON body) becomes the contract's error shape so callers handle exactly one case.
 */
function requester(send: Fetch, shown: () => number | null) {
  return async function request<T extends object>(method: string, path: string, body?: unknown): Promise<Result<T>> {
    let res: Response;
    const headers: Record<string, string> =
      body === undefined ? { accept: "application/json" } : { "content-type": "application/json" };
    // The user this tab shows: the server refuses a call whose cookie now holds someone else's session. Not on
    // /api/start, which is how a tab learns whom the cookie names.
    const user = shown();
    if (user !== null && path !== "/api/start") headers["x-tally-user"] = String(user);
    try {
      res = await send(path, {
        method,
        credentials: "same-origin",
        cache: "no-store",
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch {
      return { ok: false, error: { code: "unavailable", message: "Cannot reach the server. Check your connection." } };
    }
    const parsed: unknown = await res.json().catch(() => null);
    if (res.ok) return { ...(parsed as T), ok: true };
    const error = errorOf(parsed);
    const code = error?.code ?? CODE_BY_STATUS[res.status] ?? "unavailable";
    const message = error?.message ?? `Request failed (HTTP ${res.status}).`;
    return { ok: false, error: error?.field === undefined ? { code, message } : { code, message, field: error.field } };
  };
}

/**
 * The HTTP API. The page uses `api` (the browser's fetch, relative paths); the model-based simulation
 * (server/testing/sim) builds the same client over a fetch that adds the address, origin and session a page has.
 */
export function createApi(send: Fetch = (path, init) => fetch(path, init)) {
  let user: number | null = null;
  const request = requester(send, () => user);
  return {
    /** The user the tab shows from now on (null: none), named on each call (`X-Tally-User`). */
    showing(userId: number | null) {
      user = userId;
    },
    getSession: () => request<{ user: UserDTO }>("GET", "/api/session"),
    /** The session if any (200 with `user: null` without one, so a signed-out page logs no error) and the features. */
    start: () => request<StartResponse>("GET", "/api/start"),
    lookupUsers: (prefix: string) => request<UserLookup>("GET", `/api/users?prefix=${encodeURIComponent(prefix)}`),
    blocks: () => request<BlockList>("GET", "/api/blocks"),
    block: (name: string) => request<BlockList>("POST", "/api/blocks", { name }),
    unblock: (userId: number) => request<BlockList>("DELETE", `/api/blocks/${userId}`),
    signIn: (credentials: Credentials) => request<SessionResponse>("POST", "/api/session", credentials),
    signUp: (credentials: Credentials) => request<SessionResponse>("POST", "/api/users", credentials),
    signOut: () => request("DELETE", "/api/session"),
    signOutEverywhere: () => request<{ ended: number }>("DELETE", "/api/sessions"),
    getDemoAccounts: () => request<DemoAccounts>("GET", "/api/demo"),
    createConversation: (input: CreateConversationInput) =>
      request<{ conversation: ConversationDTO | null }>("POST", "/api/conversations", input),
    addMembers: (conversationId: number, input: AddMembersInput) =>
      request<{ conversation: ConversationDTO | null }>("POST", `/api/conversations/${conversationId}/members`, input),
    removeMember: (conversationId: number, userId: number) =>
      request<{ conversation: ConversationDTO | null }>(
        "DELETE",
        `/api/conversations/${conversationId}/members/${userId}`,
      ),
    leaveConversation: (conversationId: number) => request("POST", `/api/conversations/${conversationId}/leave`),
    deleteConversation: (conversationId: number) => request("DELETE", `/api/conversations/${conversationId}`),
    fetchMessages: (conversationId: number, query: MessagesQuery) => {
      const params = new URLSearchParams();
      if (query.before !== undefined) params.set("before", String(query.before));
      if (query.after !== undefined) params.set("after", String(query.after));
      if (query.limit !== undefined) params.set("limit", String(query.limit));
      const search = params.size > 0 ? `?${params}` : "";
      return request<MessagesResponse>("GET", `/api/conversations/${conversationId}/messages${search}`);
    },
  };
}

export type Api = ReturnType<typeof createApi>;

export const api = createApi();

/** The session calls the store makes, over `client`. */
export function sessionTransport(client: Api): SessionTransport {
  return {
    current: client.start,
    signIn: client.signIn,
    signUp: client.signUp,
    signOut: client.signOut,
    signOutEverywhere: client.signOutEverywhere,
  };
}

export const sessionApi: SessionTransport = sessionTransport(api);
