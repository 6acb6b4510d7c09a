import { readFileSync } from "node:fs";
import type { Writable } from "node:stream";
import calculateSlot from "cluster-key-slot";
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import { logger } from "../log.ts";
import { defineScripts } from "./scripts.ts";

/**
 * Where Tally's Redis is: one server (REDIS_URL) or a Redis Cluster given by some of its nodes
 * (REDIS_CLUSTER_NODES, `host:port` each; the client discovers the rest) with the AUTH every node asks for
 * (REDIS_CLUSTER_PASSWORD, REDIS_CLUSTER_USERNAME) and TLS (REDIS_CLUSTER_TLS, REDIS_CLUSTER_TLS_CA). A bare string
 * is a URL.
 */
export type RedisTarget = { url: string } | ClusterTarget;
export interface ClusterTarget {
  clusterNodes: string[];
  /** AUTH for every node: `requirepass`'s password, or an ACL user's. */
  auth?: { username?: string; password: string };
  /** TLS to every node, checked against the CA in `caFile` (a PEM file), or Node's trusted CAs without it. */
  tls?: { caFile?: string };
}

/** A command connection: one server's, or a cluster's (which routes each command to the node of its slot). */
export type RedisClient = Redis | Cluster;

export function redisTarget(target: RedisTarget | string): RedisTarget {
  return typeof target === "string" ? { url: target } : target;
}

/** Where the deployment's Redis is, if the environment says: a cluster (REDIS_CLUSTER_NODES) or one server. */
export function redisTargetOf(env: {
  REDIS_URL?: string | undefined;
  REDIS_CLUSTER_NODES?: string[] | undefined;
  REDIS_CLUSTER_PASSWORD?: string | undefined;
  REDIS_CLUSTER_USERNAME?: string | undefined;
  REDIS_CLUSTER_TLS?: "0" | "1" | undefined;
  REDIS_CLUSTER_TLS_CA?: string | undefined;
}): RedisTarget | undefined {
  if (env.REDIS_CLUSTER_NODES) {
    const { REDIS_CLUSTER_PASSWORD: password, REDIS_CLUSTER_USERNAME: username, REDIS_CLUSTER_TLS_CA: caFile } = env;
    return {
      clusterNodes: env.REDIS_CLUSTER_NODES,
      ...(password ? { auth: username ? { username, password } : { password } } : {}),
      ...(env.REDIS_CLUSTER_TLS === "1" ? { tls: caFile ? { caFile } : {} } : {}),
    };
  }
  return env.REDIS_URL ? { url: env.REDIS_URL } : undefined;
}

export function isClusterTarget(target: RedisTarget | string): target is ClusterTarget {
  return typeof target !== "string" && "clusterNodes" in target;
}

/**
 * The options every node connection of a cluster takes, the ones it discovers too: its AUTH and its TLS. A node's
 * certificate must name the address the cluster announces for it (an IP address as an IP SAN).
 */
export function clusterNodeOptions(target: ClusterTarget): RedisOptions {
  const { tls } = target;
  return {
    ...target.auth,
    ...(tls ? { tls: tls.caFile ? { ca: readFileSync(tls.caFile) } : {} } : {}),
  };
}

export function isCluster(redis: RedisClient): redis is Cluster {
  return (redis as Cluster).isCluster === true;
}

/** The environment a child process needs to reach `target` (the other variable unset). */
export function redisTargetEnv(target: RedisTarget | string): Record<string, string | undefined> {
  const t = redisTarget(target);
  return isClusterTarget(t)
    ? {
        REDIS_URL: undefined,
        REDIS_CLUSTER_NODES: t.clusterNodes.join(","),
        REDIS_CLUSTER_PASSWORD: t.auth?.password,
        REDIS_CLUSTER_USERNAME: t.auth?.username,
        REDIS_CLUSTER_TLS: t.tls ? "1" : undefined,
        REDIS_CLUSTER_TLS_CA: t.tls?.caFile,
      }
    : {
        REDIS_URL: t.url,
        REDIS_CLUSTER_NODES: undefined,
        REDIS_CLUSTER_PASSWORD: undefined,
        REDIS_CLUSTER_USERNAME: undefined,
        REDIS_CLUSTER_TLS: undefined,
        REDIS_CLUSTER_TLS_CA: undefined,
      };
}

/** For logs: the URL without its password, or the cluster's seed nodes. */
export function describeRedisTarget(target: RedisTarget | string): string {
  const t = redisTarget(target);
  if (isClusterTarget(t)) return `cluster ${t.clusterNodes.join(",")}${t.tls ? " (TLS)" : ""}`;
  try {
    const url = new URL(t.url);
    if (url.password !== "") url.password = "***";
    return url.href;
  } catch {
    return "a REDIS_URL that does not parse";
  }
}

/** `host:port` strings as ioredis' Cluster takes its startup nodes. */
export function seedNodes(nodes: string[]): { host: string; port: number }[] {
  return nodes.map((node) => {
    const at = node.lastIndexOf(":");
    return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
  });
}

/**
 * How the cluster client rides out a failover or a resharding. MOVED and ASK are followed at once (up to
 * `maxRedirections`); while a master is down (CLUSTERDOWN, a refused connection) and while a slot is migrating
 * (TRYAGAIN) a command is resent every 100 ms. 64 redirections × 100 ms outlast a failover of a cluster whose
 * cluster-node-timeout is up to about five seconds; past that the command fails, and its caller answers
 * `unavailable` (a send is still committed, and the outbox relay applies it later). Through an outage the 6.4 s
 * are a bound in time, and the commands after one that ran out fail at once (boundOutageRetries).
 */
const CLUSTER_OPTIONS: ClusterOptions = {
  maxRedirections: 64,
  retryDelayOnFailover: 100,
  retryDelayOnClusterDown: 100,
  retryDelayOnTryAgain: 100,
  retryDelayOnMoved: 0,
  // No clusterNodeRetryStrategy: a node that goes away is dropped from the pool at once and its slots are looked
  // up again, so commands follow the promoted replica instead of waiting on the dead master's reconnects.
  slotsRefreshInterval: 5000,
};

/** 64 resends 100 ms apart: how long a command is resent through an outage (see CLUSTER_OPTIONS). */
const OUTAGE_RETRY_MS = 6400;
/** After a command has been resent that long in vain, how long the next ones that meet the outage fail at once. */
const OUTAGE_HOLD_MS = 2000;
/** What a cluster answers while a master is down: CLUSTERDOWN, or a refused or closed connection to it. */
const OUTAGE_ERROR = /^CLUSTERDOWN |^Connection is closed\.$/;

/**
 * Bounds by time what `maxRedirections` bounds by count, and once per outage instead of once per command. ioredis
 * waits for a slots refresh between two resends, so 64 of them took 7 to 11 s, and every command waited out its own:
 * a request that makes three Redis calls in turn (a sign-in) answered after 26 s with a shard down. Here a command
 * is resent through an outage for at most OUTAGE_RETRY_MS from its first such error; once one has run out, the
 * commands that meet the outage in the following OUTAGE_HOLD_MS (counted from the last of them) fail at once, with
 * the outage's error as the last error. A failover shorter than OUTAGE_RETRY_MS is ridden out as before: no command
 * runs out, so none fails early. MOVED, ASK and TRYAGAIN are left to ioredis.
 */
export function boundOutageRetries(
  cluster: Cluster,
  { retryMs = OUTAGE_RETRY_MS, holdMs = OUTAGE_HOLD_MS, now = Date.now } = {},
): Cluster {
  const handleError = cluster.handleError.bind(cluster);
  let failFastUntil = 0;
  // ttl: the command's (or pipeline's) own retry state; handlers.maxRedirections rejects it as ioredis does.
  cluster.handleError = (
    error,
    ttl: { value?: unknown; outageSince?: number },
    handlers: { maxRedirections(err: Error): void },
  ) => {
    if (!OUTAGE_ERROR.test(error.message)) return handleError(error, ttl, handlers);
    const t = now();
    ttl.outageSince ??= t;
    if (t < failFastUntil || t - ttl.outageSince >= retryMs) {
      failFastUntil = t + holdMs;
      handlers.maxRedirections(
        new Error(
          `Redis Cluster unavailable for ${t - ttl.outageSince} ms of this command. Last error: ${String(error)}`,
        ),
      );
      return;
    }
    handleError(error, ttl, handlers);
  };
  return cluster;
}

/** How long a single Redis's commands wait for it once it has gone away: a restart is ridden out. */
const SINGLE_OUTAGE_WAIT_MS = 2000;
/** The most a single Redis's connection waits between two reconnection attempts. */
const SINGLE_RECONNECT_MAX_MS = 1000;

/**
 * How long a connection with commands in flight may go without a byte from Redis before ioredis destroys it and
 * reconnects (its `socketTimeout`). A Redis that stops answering but keeps its connections open (its process
 * paused, or the network dropping packets without a reset) otherwise held every command, and every request that made
 * one, for good: a closed connection is what boundOutageWait and the cluster's retries bound. Tally's longest
 * command, a big user's rebuild, answers in about 150 ms (docs/benchmarks.md). A command it cut can run twice: ioredis
 * resends it once the connection is back, and a paused Redis runs the first copy too when it resumes; Tally's
 * scripts are idempotent (docs/scaling.md, "A Redis that stops answering").
 */
const SOCKET_TIMEOUT_MS = 5000;
/** How often the adapter's subscriber on a single Redis pings it, so that its socketTimeout can see it stop. */
const SUBSCRIBER_PING_MS = 5000;

/**
 * Reconnects to a single Redis at most SINGLE_RECONNECT_MAX_MS apart (ioredis' default backs off to 5 s, so a
 * Redis back after an outage was used again only up to 5 s later). The jitter spreads an instance's connections.
 */
export function singleRetryStrategy(times: number): number {
  return Math.min(50 * 2 ** (times - 1), SINGLE_RECONNECT_MAX_MS) + Math.floor(Math.random() * 100);
}

/** What boundOutageWait reaches of ioredis beyond its typings: the queues it fails, as maxRetriesPerRequest does. */
interface QueuesOf {
  flushQueue(err: Error, options?: { offlineQueue?: boolean; commandQueue?: boolean }): void;
  /** Commands sent before the connection dropped, resent once it is ready again (null when none). */
  prevCommandQueue?: { length: number; shift(): { command: { reject(err: Error): void } } | undefined } | null;
}

/**
 * Bounds how long a single Redis's commands wait through an outage. ioredis queues the commands issued while the
 * connection is down and fails them only every `maxRetriesPerRequest + 1` reconnection attempts, which its backoff
 * spaces 5 s apart: each command waited up to 15 s, and a request that makes three Redis calls in turn (a sign-in:
 * its two limits, then the session) answered after 20 to 46 s (an operator's walkthrough). Here, once the
 * connection has been away for `waitMs`, the commands waiting for it fail (those queued meanwhile, and those sent
 * before it dropped that ioredis would resend), and the next ones fail at once (ioredis' offline queue is off)
 * until it is ready again. A restart shorter than `waitMs` is ridden out. Give the client `maxRetriesPerRequest:
 * null`, or ioredis fails them sooner on its own count of reconnections (0.25 s into an outage with 2).
 * A connection that is up but still in its handshake (`connect`) keeps its handshake's commands: failing them would
 * drop its reply parser, and it would stay in `connect` for good.
 * The caller of a command that failed answers `unavailable`, or falls back (the limits' in-memory limiters); a send
 * is committed by then, and the outbox relay applies it once Redis is back. Once it has fired, `quit()`
 * disconnects (ioredis would refuse it with its queue off, and reconnect on).
 */
export function boundOutageWait(redis: Redis, { waitMs = SINGLE_OUTAGE_WAIT_MS } = {}): Redis {
  const queues = redis as unknown as QueuesOf;
  if (typeof queues.flushQueue !== "function")
    throw new Error("this ioredis has no flushQueue: boundOutageWait needs it");
  const queueing = redis.options.enableOfflineQueue;
  let timer: NodeJS.Timeout | undefined;
  redis.on("close", () => {
    if (timer || !queueing) return;
    timer = setTimeout(() => {
      timer = undefined;
      if (redis.status === "ready" || redis.status === "end") return;
      redis.options.enableOfflineQueue = false;
      const err = new Error(`Redis has been unreachable for ${waitMs} ms`);
      queues.flushQueue(err, { offlineQueue: true, commandQueue: redis.status !== "connect" });
      const sentBefore = queues.prevCommandQueue;
      for (let item = sentBefore?.shift(); item; item = sentBefore?.shift()) item.command.reject(err);
    }, waitMs);
    timer.unref();
  });
  redis.on("ready", () => {
    clearTimeout(timer);
    timer = undefined;
    redis.options.enableOfflineQueue = queueing;
  });
  const quit = redis.quit.bind(redis);
  redis.quit = ((...args: Parameters<typeof quit>) => {
    if (redis.options.enableOfflineQueue || redis.status === "ready") return quit(...args);
    redis.disconnect();
    return Promise.resolve("OK");
  }) as typeof redis.quit;
  return redis;
}

/** How often, at most, the adapter's subscriber cluster looks its slots up again. */
const SLOT_REFRESH_EVERY_MS = 500;

/**
 * A shard whose master and replicas are all dead keeps its slots in the cluster's table, so ioredis' sharded
 * subscribers make a subscriber for its dead master, whose failed connection ("-node") asks at once for the slots,
 * which name the dead master again: about 180 failed connects a second, and an instance at a whole core with no
 * client connected (measured with strace on a start:cluster instance, a shard's master and replica killed). The
 * subscriber group's own backoff is bypassed by that path. Refreshes are spaced here: the first at once, then at
 * most one every SLOT_REFRESH_EVERY_MS, each caller's callback answered by the refresh that follows its call.
 */
export function paceSlotRefreshes(cluster: Cluster, everyMs = SLOT_REFRESH_EVERY_MS, now = Date.now): Cluster {
  const refresh = cluster.refreshSlotsCache.bind(cluster);
  let last = -Infinity;
  let timer: NodeJS.Timeout | null = null;
  let waiting: ((err?: Error | null) => void)[] = [];
  const run = () => {
    timer = null;
    last = now();
    const callbacks = waiting;
    waiting = [];
    refresh((err?: Error | null) => {
      for (const callback of callbacks) callback(err);
    });
  };
  cluster.refreshSlotsCache = (callback?: (err?: Error | null) => void) => {
    if (callback) waiting.push(callback);
    if (timer !== null) return;
    const wait = last + everyMs - now();
    if (wait <= 0) run();
    else timer = setTimeout(run, wait);
  };
  cluster.once("end", () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  });
  return cluster;
}

/** ioredis reconnects by itself; without a listener it would print every failed attempt as unhandled. */
function logErrors<T extends RedisClient>(redis: T, role: string): T {
  let last = 0;
  redis.on("error", (err: Error) => {
    const now = Date.now();
    if (now - last < 5000) return; // one line per outage, not one per retry
    last = now;
    logger.warn({ role, err: err.message }, "redis connection error; reconnecting");
  });
  return redis;
}

/**
 * Makes each connection of `client` send the commands issued in one turn of the event loop with one write: the
 * socket is corked at the turn's first command and uncorked once its callbacks and promise continuations have run
 * (process.nextTick). A group of sends issues its counter scripts in one turn, and on this kind of machine a write
 * to a loopback socket, with the wake-up of Redis it causes, costs more than the command (docs/benchmarks.md, "Where
 * the time went"). ioredis' auto-pipelining batches the same way but builds a Pipeline object per turn, which cost
 * more CPU than it saved; a cork costs nothing.
 */
export function coalesceWrites<T extends RedisClient>(client: T): T {
  const corkPerTurn = (stream: Writable) => {
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    let corked = false;
    const uncork = () => {
      corked = false;
      stream.uncork();
    };
    stream.write = ((...args: unknown[]) => {
      if (!corked) {
        corked = true;
        stream.cork();
        process.nextTick(uncork);
      }
      return write(...args);
    }) as Writable["write"];
  };
  // Every connection, reconnections included (each has a new socket).
  const watch = (redis: Redis) => redis.on("connect", () => corkPerTurn(redis.stream));
  if (isCluster(client)) client.on("+node", watch);
  else watch(client);
  return client;
}

/**
 * A command connection with Tally's scripts defined, its writes coalesced per turn of the event loop
 * (coalesceWrites), without ioredis' auto-pipelining.
 */
export function createRedis(target: RedisTarget | string, options: RedisOptions = {}): RedisClient {
  const t = redisTarget(target);
  const redisOptions: RedisOptions = { maxRetriesPerRequest: 2, socketTimeout: SOCKET_TIMEOUT_MS, ...options };
  const client: RedisClient = isClusterTarget(t)
    ? boundOutageRetries(
        new Cluster(seedNodes(t.clusterNodes), {
          ...CLUSTER_OPTIONS,
          redisOptions: { ...redisOptions, ...clusterNodeOptions(t) },
        }),
      )
    : // Time alone bounds a command's wait through an outage (boundOutageWait), unless the caller counts retries.
      boundOutageWait(
        new Redis(t.url, {
          retryStrategy: singleRetryStrategy,
          maxRetriesPerRequest: null,
          socketTimeout: SOCKET_TIMEOUT_MS,
          ...options,
        }),
      );
  defineScripts(client);
  return logErrors(coalesceWrites(client), "commands");
}

/**
 * What is wrong with a single Redis's URL that reconnecting would never fix, or null (also when the server cannot be
 * reached now: an instance starts and reconnects, as in an outage). Seen by an operator: a database index the
 * server lacks (`/99`) was refused at connect, and every command then ran in database 0, with the health check
 * green; a URL naming a Redis Cluster node passed the health check while every sync failed (`MOVED`).
 */
export async function redisUrlProblem(url: string): Promise<string | null> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    connectTimeout: 5000,
    // A Redis that takes the connection and never answers (paused) held the start for good.
    socketTimeout: SOCKET_TIMEOUT_MS,
  });
  client.on("error", () => undefined); // the answers below say what matters
  try {
    await client.connect();
  } catch {
    return null;
  }
  try {
    const db = client.options.db ?? 0;
    if (db !== 0) {
      const refused = await client.select(db).then(
        () => null,
        (err: unknown) => (err instanceof Error ? err.message : String(err)),
      );
      if (refused) return `REDIS_URL names database ${db}, which this Redis refuses (${refused}).`;
    }
    const info = await client.info("cluster").catch(() => "");
    if (/cluster_enabled:1/.test(info))
      return "REDIS_URL points at a node of a Redis Cluster: set REDIS_CLUSTER_NODES (some of its nodes) instead.";
    return null;
  } finally {
    client.disconnect();
  }
}

export interface AdapterClients {
  pub: RedisClient;
  sub: RedisClient;
  /** A cluster's clients: the adapter uses sharded pub/sub. */
  sharded: boolean;
  /** What this deployment's pub/sub channels begin with (`channelPrefix`). */
  prefix: string;
}

/**
 * What a deployment's pub/sub channels begin with. Redis' pub/sub ignores the database number: two deployments on
 * one server, in databases 0 and 5, heard each other's pushes (an operator's walkthrough: one's user 1 was sent the
 * other's messages and counts). A database other than 0 (the URL's path, or its `db` parameter) names its channels
 * after it; 0, and a cluster (which has only 0), keep the names instances have always used, so a rolling upgrade
 * still reaches them.
 */
export function channelPrefix(target: RedisTarget | string): string {
  const t = redisTarget(target);
  if (isClusterTarget(t)) return "";
  const url = new URL(t.url);
  const db = Number(url.searchParams.get("db") ?? (url.pathname.replace(/^\//, "") || 0));
  return Number.isSafeInteger(db) && db > 0 ? `db${db}:` : "";
}

/**
 * Pub/sub connections for the Socket.IO Redis adapter (the publisher's writes coalesced per turn). RESP2 keeps the
 * adapter on the protocol it was written against (ioredis 6 defaults to RESP3). On a cluster they are cluster
 * clients with sharded subscribers (one subscriber connection per shard), for the adapter's sharded pub/sub
 * (SSUBSCRIBE/SPUBLISH).
 *
 * The subscriber's commands wait for Redis however long it is away (`maxRetriesPerRequest: null`): the adapter
 * subscribes without awaiting or catching (at start, and on a cluster for every room it opens), so a subscription
 * that failed (on one Redis after 2 s away, `boundOutageWait`; on a cluster after its retries) would be an unhandled
 * rejection, which ends the process.
 */
export function createAdapterClients(
  target: RedisTarget | string,
  options: RedisOptions = {},
  { pingEveryMs = SUBSCRIBER_PING_MS } = {},
): AdapterClients {
  const t = redisTarget(target);
  const redisOptions: RedisOptions = { protocol: 2, socketTimeout: SOCKET_TIMEOUT_MS, ...options };
  const subOptions: RedisOptions = { ...redisOptions, maxRetriesPerRequest: null };
  if (isClusterTarget(t)) {
    const cluster = (nodeOptions: RedisOptions) =>
      new Cluster(seedNodes(t.clusterNodes), {
        ...CLUSTER_OPTIONS,
        shardedSubscribers: true,
        redisOptions: { ...nodeOptions, ...clusterNodeOptions(t) },
      });
    return {
      pub: publicationFailuresHandled(logErrors(coalesceWrites(cluster(redisOptions)), "adapter-pub")),
      sub: subscriptionFailuresHandled(logErrors(paceSlotRefreshes(cluster(subOptions)), "adapter-sub")),
      sharded: true,
      prefix: channelPrefix(t),
    };
  }
  const single = { retryStrategy: singleRetryStrategy, maxRetriesPerRequest: null, ...redisOptions };
  const pub = logErrors(coalesceWrites(boundOutageWait(new Redis(t.url, single))), "adapter-pub");
  return {
    pub: publicationFailuresHandled(pub),
    sub: subscriptionFailuresHandled(
      logErrors(pinged(new Redis(t.url, { ...single, maxRetriesPerRequest: null }), pingEveryMs), "adapter-sub"),
    ),
    sharded: false,
    prefix: channelPrefix(t),
  };
}

/**
 * Pings `redis` every `everyMs` while it is ready. A subscriber sends no commands of its own once subscribed, so its
 * socketTimeout never ran: a Redis that stopped answering without closing the connection left it subscribed to
 * nothing for good, every push from other instances lost and no tab told to resync. A ping unanswered for the
 * socketTimeout closes the connection instead; the subscriber reconnects, subscribes again, and every local tab
 * resyncs (app.ts).
 */
function pinged(redis: Redis, everyMs: number): Redis {
  const timer = setInterval(() => {
    if (redis.status === "ready") redis.ping().catch(() => undefined); // a failure closes the connection
  }, everyMs).unref();
  redis.on("end", () => clearInterval(timer));
  return redis;
}

/**
 * The Socket.IO adapter publishes without awaiting (every broadcast, every disconnect request). With Redis away
 * longer than 2 s (`boundOutageWait`; on a cluster, its retries), such a publication rejects with nobody to handle it, and an
 * unhandled rejection ends a Node process: one push during an outage would take the instance down. Each
 * publication's failure is handled here (it is lost, as a push is while Redis is away: every tab resyncs when the
 * subscriber is back); a caller that awaits it still sees it.
 */
function publicationFailuresHandled(client: RedisClient): RedisClient {
  return failuresHandled(client, ["publish", "spublish"]);
}

/**
 * The adapter subscribes and unsubscribes without awaiting either (at start, and on a cluster for every room it
 * opens and closes). The subscriber waits for Redis however long it is away (`maxRetriesPerRequest: null`), so such
 * a command fails only when the connection is closed for good, as the instance stops (nothing to report), or when
 * Redis refuses it (logged: the instance would miss those pushes). Either way not as an unhandled rejection, which
 * would end the process.
 */
function subscriptionFailuresHandled(client: RedisClient): RedisClient {
  return failuresHandled(
    client,
    ["subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe"],
    (err) => {
      if (client.status !== "end") logger.warn({ err }, "the adapter's subscriber could not (un)subscribe");
    },
  );
}

/** `client`'s commands `names` with each call's failure handled by `onFailure`; a caller that awaits still sees it. */
function failuresHandled(
  client: RedisClient,
  names: readonly (keyof Redis & keyof Cluster)[],
  onFailure: (err: unknown) => void = () => undefined,
): RedisClient {
  for (const name of names) {
    const original = (client[name] as (...args: unknown[]) => Promise<unknown>).bind(client);
    Object.assign(client, {
      [name]: (...args: unknown[]) => {
        const call = original(...args);
        call.catch(onFailure);
        return call;
      },
    });
  }
  return client;
}

/** The hash slot of a key (its `{tag}` when it has one), as Redis Cluster computes it. */
export function keySlot(key: string): number {
  return calculateSlot(key);
}

/**
 * Splits `items` into the groups one pipeline each may carry: all of them on one server; on a cluster, one
 * group per master serving their slots (ioredis sends a cluster pipeline to a single node). A slot moved since
 * the client's last refresh answers MOVED inside its group; the caller retries those items one by one.
 */
export function groupByNode<T>(redis: RedisClient, items: T[], keyOf: (item: T) => string): T[][] {
  if (!isCluster(redis) || items.length < 2) return [items];
  return groupBy(items, (item) => {
    const slot = keySlot(keyOf(item));
    return redis.slots[slot]?.[0] ?? `slot ${slot}`;
  });
}

/** Splits `items` into one group per hash slot: what one multi-key command may carry on a cluster. */
export function groupBySlot<T>(items: T[], keyOf: (item: T) => string): T[][] {
  return groupBy(items, (item) => keySlot(keyOf(item)));
}

function groupBy<T, K>(items: T[], groupOf: (item: T) => K): T[][] {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = groupOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return [...groups.values()];
}

/**
 * The cluster client's own connection to the master serving `key`'s slot (per its slot table), for commands
 * that must share one connection, as WATCH … EXEC must: the cluster routes each command by itself and keeps no
 * such affinity. Without clusterNodeRetryStrategy (neither Tally nor the lab sets one) a node connection never
 * reconnects: ioredis ends a lost one and opens a new one, so state such as a WATCH is never lost silently, the
 * next command on it fails. Undefined while the slot's master is unknown.
 */
export function masterConnection(redis: Cluster, key: string): Redis | undefined {
  const node = redis.slots[keySlot(key)]?.[0];
  return redis.nodes("master").find((n) => `${n.options.host}:${n.options.port}` === node);
}

/** A MOVED or ASK reply (also inside an aborted transaction): the key's slot is served, or moving, elsewhere. */
export function isRedirection(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const previous = (err as Error & { previousErrors?: unknown[] }).previousErrors ?? [];
  return /^(MOVED|ASK) /.test(err.message) || previous.some(isRedirection);
}
