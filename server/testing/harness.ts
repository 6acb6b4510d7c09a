import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { io as connect, type Socket } from "socket.io-client";
import { inject } from "vitest";
import { createApp, type App } from "../app.ts";
import type { ClientToServerEvents, ServerToClientEvents, UserDTO } from "../contracts/index.ts";
import { createDb, type Db } from "../db/prisma.ts";
import { labModule } from "../lab/module.ts";
import { defaultLimits, type LimitRules } from "../limits/limits.ts";
import { logger } from "../log.ts";
import {
  createAdapterClients,
  createRedis,
  isCluster,
  redisTarget as targetOf,
  type RedisClient,
} from "../redis/client.ts";
import { createTestDatabase } from "./db.ts";

export type ClientSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

export interface Instance {
  url: string;
  app: App;
  httpServer: HttpServer;
  close(): Promise<void>;
}

export interface Harness {
  db: Db;
  redis: RedisClient;
  instances: Instance[];
  /** Creates an account (password TEST_PASSWORD) and returns its session. */
  signUp(name: string, instance?: number): Promise<{ user: UserDTO; token: string }>;
  connect(token: string, instance?: number): Promise<ClientSocket>;
  http(
    path: string,
    init?: RequestInit & { token?: string; instance?: number },
  ): Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  close(): Promise<void>;
}

export const TEST_PASSWORD = "test-password-1234";

/** Limits high enough that tests which are not about limits never meet one. */
export const GENEROUS_LIMITS: LimitRules = Object.fromEntries(
  Object.keys(defaultLimits).map((name) => [name, { points: 1_000_000, durationS: 1 }]),
) as LimitRules;

export interface HarnessOptions {
  unreadTtlMs?: number;
  /** The instant (ms) unread expiry is judged at, on every instance (default: Redis' TIME). */
  clock?: () => number;
  /** Limits for this harness (default: GENEROUS_LIMITS); name only the ones under test. */
  limits?: Partial<LimitRules>;
  maxSocketsPerUser?: number;
  allowedOrigins?: string[];
  /** Take the client's address from X-Forwarded-For (TRUST_PROXY=1). */
  trustProxy?: boolean;
  lab?: boolean;
  metricsToken?: string;
  /** A database of the test redis-server other than 0 (one server only: a cluster has only 0). */
  redisDb?: number;
}

/** The test redis-server's URL with database `db`. */
function inDatabase(shared: ReturnType<typeof inject<"redisTarget">>, db: number): string {
  const target = targetOf(shared);
  if (!("url" in target)) throw new Error("a database other than 0 needs one redis-server, not a cluster");
  return `${target.url.replace(/\/\d*$/, "")}/${db}`;
}

/** FLUSHALL on the test Redis: every master of a cluster (a cluster client sends a key-less command to one node). */
export async function flushRedis(redis: RedisClient): Promise<void> {
  if (!isCluster(redis)) return void (await redis.flushall());
  await redis.ping(); // the node list is empty until the client has loaded the slot table
  const masters = redis.nodes("master");
  if (masters.length === 0) throw new Error("the cluster client knows no master");
  await Promise.all(masters.map((node) => node.flushall()));
}

/**
 * Real servers for integration tests: `count` Tally instances on ephemeral ports, sharing one fresh database
 * and the test redis-server through the Redis adapter, exactly as production wires them.
 */
export async function startHarness(count = 2, options: HarnessOptions = {}): Promise<Harness> {
  const database = await createTestDatabase(inject("pgAdminUrl"));
  const shared = inject("redisTarget");
  const redisTarget = options.redisDb === undefined ? shared : inDatabase(shared, options.redisDb);
  const db = createDb(database.url);
  const redis = createRedis(redisTarget);
  // The test Redis belongs to this test run; files run one at a time, so each starts from empty.
  await flushRedis(redis);
  const log = logger.child({}, { level: "silent" });
  const sockets: ClientSocket[] = [];

  const instances: Instance[] = [];
  for (let i = 0; i < count; i++) {
    const httpServer = createServer();
    const adapterClients = createAdapterClients(redisTarget);
    const appRedis = createRedis(redisTarget);
    const app = createApp({
      httpServer,
      redis: appRedis,
      db,
      adapterClients,
      log,
      clock: options.clock,
      modules: options.lab === false ? [] : [labModule],
      config: {
        cookies: { secure: false, sameSite: "lax" },
        trustProxy: options.trustProxy ?? false,
        limits: { ...GENEROUS_LIMITS, ...options.limits },
        maxSocketsPerUser: options.maxSocketsPerUser ?? 1000,
        lab: options.lab !== false,
        ...(options.allowedOrigins ? { allowedOrigins: options.allowedOrigins } : {}),
        ...(options.unreadTtlMs ? { unreadTtlMs: options.unreadTtlMs } : {}),
        ...(options.metricsToken ? { metricsToken: options.metricsToken } : {}),
      },
    });
    await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
    const { port } = httpServer.address() as AddressInfo;
    instances.push({
      url: `http://127.0.0.1:${port}`,
      app,
      httpServer,
      close: async () => {
        await app.close();
        await Promise.allSettled([appRedis.quit(), adapterClients.pub.quit(), adapterClients.sub.quit()]);
      },
    });
  }

  async function http(path: string, init: RequestInit & { token?: string; instance?: number } = {}) {
    const { token, instance = 0, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (token) headers.set("authorization", `Bearer ${token}`);
    if (rest.body && !headers.has("content-type")) headers.set("content-type", "application/json");
    const res = await fetch(`${instances[instance]!.url}${path}`, { ...rest, headers });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  return {
    db,
    redis,
    instances,
    http,
    async signUp(name, instance = 0) {
      const body = JSON.stringify({ name, password: TEST_PASSWORD });
      const res = await http("/api/users", { method: "POST", body, instance });
      if (res.status !== 200) throw new Error(`sign-up failed: ${JSON.stringify(res.body)}`);
      return res.body as { user: UserDTO; token: string };
    },
    connect(token, instance = 0) {
      return connectSocket<ClientSocket>(`${instances[instance]!.url}`, token, sockets);
    },
    async close() {
      for (const s of sockets) s.disconnect();
      for (const instance of instances) await instance.close();
      await Promise.allSettled([redis.quit(), db.$disconnect()]);
      await database.drop();
    },
  };
}

/**
 * A real socket.io client to `url` (a namespace URL works too), authenticated with `token` when given, added to
 * `track` so the caller can disconnect it; resolves once connected, rejects with the connect error.
 */
export function connectSocket<S extends Socket>(
  url: string,
  token: string | undefined,
  track: { disconnect(): void }[],
): Promise<S> {
  const socket = connect(url, {
    auth: token ? { token } : {},
    transports: ["websocket"],
    forceNew: true,
    reconnection: false,
  }) as S;
  track.push(socket);
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("connect_error", reject);
  });
}

/** Resolves with the next `event` on `socket` that satisfies `match`, or rejects after `ms`. */
export function nextEvent<E extends keyof ServerToClientEvents>(
  socket: ClientSocket,
  event: E,
  match: (...args: Parameters<ServerToClientEvents[E]>) => boolean = () => true,
  ms = 5000,
): Promise<Parameters<ServerToClientEvents[E]>[0]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.off(event, listener as never);
      reject(new Error(`timed out waiting for ${String(event)}`));
    }, ms);
    const listener = (...args: Parameters<ServerToClientEvents[E]>) => {
      if (!match(...args)) return;
      clearTimeout(timer);
      socket.off(event, listener as never);
      resolve(args[0]);
    };
    socket.on(event, listener as never);
  });
}
