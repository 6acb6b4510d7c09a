import { mkdtemp, rm } from "node:fs/promises";
import { connect as connectTcp, createServer, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { Redis } from "ioredis";
import { freePort } from "../embedded/ports.ts";
import { startRedisServer } from "../embedded/redis.ts";
import { Server } from "socket.io";
import { redisAdapter } from "../realtime/adapter.ts";
import {
  boundOutageWait,
  channelPrefix,
  coalesceWrites,
  createAdapterClients,
  createRedis,
  redisTarget,
  redisUrlProblem,
} from "./client.ts";

const clients: Redis[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.quit().catch(() => undefined)));
});

function connect(): Redis {
  const target = redisTarget(inject("redisTarget"));
  if (!("url" in target)) throw new Error("this file runs on one redis-server");
  const client = coalesceWrites(new Redis(target.url));
  clients.push(client);
  return client;
}

/** `promise`, or a rejection once `ms` have passed: a test that failed frees its paused Redis (`finally`). */
const notAfter = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms).unref()),
  ]);

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The rejections nobody handles while `run` runs, as the process would see them (each one would end it). */
async function unhandledDuring(run: () => Promise<void>): Promise<unknown[]> {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    await run();
    await new Promise((resolve) => setTimeout(resolve, 100)); // a rejection left unhandled is reported by now
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
  return unhandled;
}

describe("coalesceWrites", () => {
  it("holds the commands of one turn in the socket and sends them together once the turn is over", async () => {
    const redis = connect();
    await redis.ping();
    const replies = Promise.all([redis.ping("a"), redis.ping("b"), redis.ping("c")]);
    expect(redis.stream.writableCorked).toBe(1);
    expect(redis.stream.writableLength).toBeGreaterThan(0); // buffered, not written yet
    await nextTurn();
    expect(redis.stream.writableCorked).toBe(0);
    expect(await replies).toEqual(["a", "b", "c"]);
  });

  it("also coalesces the socket of a reconnection", async () => {
    const redis = connect();
    await redis.ping();
    const first = redis.stream;
    const reconnected = new Promise((resolve) => redis.once("ready", resolve));
    redis.disconnect(true);
    await reconnected;
    expect(redis.stream).not.toBe(first);
    const reply = redis.ping("again");
    expect(redis.stream.writableCorked).toBe(1);
    expect(await reply).toBe("again");
  });
});

describe("the adapter's clients", () => {
  it("handle a publication that fails with nobody awaiting it, and still fail one that is awaited", async () => {
    // Nothing listens there: each publication fails once its retries (none here; 20 by default) are spent.
    const { pub, sub } = createAdapterClients(`redis://127.0.0.1:${await freePort()}`, { maxRetriesPerRequest: 0 });
    try {
      const unhandled = await unhandledDuring(async () => {
        void pub.publish("tally-test", "as the adapter publishes: not awaited");
        await expect(pub.publish("tally-test", "awaited")).rejects.toThrow();
      });
      expect(unhandled).toEqual([]);
    } finally {
      pub.disconnect();
      sub.disconnect();
    }
  });

  it("keep a subscription waiting while Redis is away, past the retries that fail a publication", async () => {
    // Reconnections 1 ms apart, so that the 20 retries after which ioredis fails a command pass at once.
    const { pub, sub } = createAdapterClients(`redis://127.0.0.1:${await freePort()}`, { retryStrategy: () => 1 });
    try {
      let subscription: Promise<unknown> | undefined;
      const unhandled = await unhandledDuring(async () => {
        // As the adapter subscribes: neither awaited nor caught.
        subscription = sub.subscribe("tally-test");
        let reconnections = 0;
        await new Promise<void>((resolve) =>
          sub.on("reconnecting", () => {
            if (++reconnections === 60) resolve();
          }),
        );
      });
      expect(unhandled).toEqual([]);
      // Still waiting: a handler added now runs in this turn's microtasks if it has settled (failed) before.
      let settled = false;
      subscription!.then(
        () => (settled = true),
        () => (settled = true),
      );
      await nextTurn();
      expect(settled).toBe(false);
    } finally {
      pub.disconnect();
      sub.disconnect();
    }
  });

  it("let the adapter's pending (un)subscriptions fail quietly when the subscriber closes, as the instance stops", async () => {
    // A server that takes connections and never answers: the subscriber stays connected and not ready, with its
    // commands queued, until it is closed (as a Redis that hangs, or one still starting, would hold them).
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const connected = new Promise((resolve) => silent.once("connection", resolve));
    const { pub, sub } = createAdapterClients(`redis://127.0.0.1:${(silent.address() as AddressInfo).port}`);
    pub.disconnect();
    try {
      let pending: Promise<unknown>[] = [];
      const unhandled = await unhandledDuring(async () => {
        // As the adapter does, at start and as a cluster's rooms open and close: neither awaited nor caught.
        pending = [sub.subscribe("a"), sub.psubscribe("b*"), sub.unsubscribe("a"), sub.punsubscribe("b*")];
        await connected;
        const ended = new Promise((resolve) => sub.once("end", resolve));
        sub.disconnect();
        await ended;
      });
      expect(unhandled).toEqual([]);
      // Each one failed as the connection closed; a caller that awaits them still sees it.
      const outcomes = await Promise.allSettled(pending);
      expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected", "rejected"]);
    } finally {
      sub.disconnect();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe("deployments on one redis-server", () => {
  it("hear each other only in the same database: pub/sub ignores the database number, the channels do not", async () => {
    const target = redisTarget(inject("redisTarget"));
    if (!("url" in target)) throw new Error("this file runs on one redis-server");
    const base = target.url.replace(/\/\d*$/, "");
    expect([channelPrefix(base), channelPrefix(`${base}/0`), channelPrefix(`${base}/5`)]).toEqual(["", "", "db5:"]);
    expect(channelPrefix(`${base}?db=7`)).toBe("db7:");

    // Four instances: two of one deployment in database 5, two of another in database 0. What one says to its
    // deployment (a server-side emit, as a session's end is) reaches its sibling and not the other deployment.
    const servers = [`${base}/5`, `${base}/5`, `${base}/0`, `${base}/0`].map((url) => {
      const clients = createAdapterClients(url);
      return { io: new Server({ adapter: redisAdapter(clients) }), clients };
    });
    try {
      const heard = servers.map(() => [] as string[]);
      servers.forEach(({ io }, i) => io.on("ping-test" as never, ((text: string) => heard[i]!.push(text)) as never));
      // Subscriptions are made as the adapters start: wait until every server's subscriber has its channels.
      for (const channel of ["db5:socket.io-request#/#", "socket.io-request#/#"]) {
        await expect.poll(async () => (await servers[0]!.clients.pub.pubsub("NUMSUB", channel)).at(1)).toBe(2);
      }
      // In this order, each published before the next is sent (a PING answered on the same connection): a
      // subscriber receives publications in the order Redis took them, so once the last is heard, a leak of an
      // earlier one would have been heard before it.
      const emit = async (i: number, text: string) => {
        servers[i]!.io.serverSideEmit("ping-test" as never, text as never);
        await servers[i]!.clients.pub.ping();
      };
      await emit(2, "from db0");
      await emit(0, "from db5");
      await emit(3, "last, db0");
      await emit(1, "last, db5");
      await expect.poll(() => heard).toEqual([["last, db5"], ["from db5"], ["last, db0"], ["from db0"]]);
    } finally {
      for (const { io, clients } of servers) {
        // Never attached to an HTTP server, it has no engine: close() closes the adapter, then throws on that.
        await io.close().catch(() => undefined);
        clients.pub.disconnect();
        clients.sub.disconnect();
      }
    }
  });
});

describe("redisUrlProblem", () => {
  it("names a database the server lacks and a cluster node, and lets a fine or unreachable URL start", async () => {
    const target = redisTarget(inject("redisTarget"));
    if (!("url" in target)) throw new Error("this file runs on one redis-server");
    const base = target.url.replace(/\/\d*$/, "");
    expect(await redisUrlProblem(`${base}/99`)).toMatch(
      /^REDIS_URL names database 99, which this Redis refuses \(ERR DB index is out of range\)/,
    );
    expect(await redisUrlProblem(`${base}/3`)).toBeNull();
    expect(await redisUrlProblem(base)).toBeNull();
    expect(await redisUrlProblem(`redis://127.0.0.1:${await freePort()}`)).toBeNull();
    // A node started in cluster mode (no slots yet: what a URL to one node of a cluster reaches).
    const dir = await mkdtemp(join(tmpdir(), "tally-node-"));
    const node = await startRedisServer({
      dir,
      args: ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"],
    });
    try {
      expect(await redisUrlProblem(node.url)).toBe(
        "REDIS_URL points at a node of a Redis Cluster: set REDIS_CLUSTER_NODES (some of its nodes) instead.",
      );
    } finally {
      await node.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("boundOutageWait", () => {
  it("fails what waits for a single Redis once it has been away that long, then fails at once until it is back", async () => {
    const server = await startRedisServer();
    // As createRedis makes it: ioredis counts no retries of its own, time alone bounds the wait.
    const redis = boundOutageWait(
      new Redis(server.url, { maxRetriesPerRequest: null, retryStrategy: () => 50, lazyConnect: true }),
      { waitMs: 300 },
    );
    redis.on("error", () => undefined);
    try {
      await redis.connect();
      await redis.set("k", "1");
      server.kill();
      await new Promise<void>((resolve) => redis.once("close", () => resolve()));
      // Issued while the connection is away: queued, then failed by the bound.
      await expect(redis.get("k")).rejects.toThrow("Redis has been unreachable for 300 ms");
      // Now the outage is known: no waiting in the queue.
      await expect(redis.get("k")).rejects.toThrow(/enableOfflineQueue options is false/);
      const ready = new Promise<void>((resolve) => redis.once("ready", () => resolve()));
      await server.restart();
      await ready;
      // Back: commands run (the restarted server is empty), and queue again through the next short gap.
      expect(await redis.get("k")).toBeNull();
      expect(redis.options.enableOfflineQueue).toBe(true);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it("leaves a connection that is up but still in its handshake alone, which then gets ready", async () => {
    const server = await startRedisServer();
    // Between the client and Redis: drops every connection on request, and holds Redis' replies until released
    // (a far or busy Redis answering a reconnection's handshake late).
    let holding = false;
    const held: Array<() => void> = [];
    const links = new Set<Socket>();
    const proxy = createServer((client) => {
      const upstream = connectTcp(server.port, "127.0.0.1");
      links.add(client);
      client.on("data", (chunk) => upstream.write(chunk));
      upstream.on("data", (chunk) => {
        const pass = () => client.writable && client.write(chunk);
        if (holding) held.push(pass);
        else pass();
      });
      const end = () => {
        client.destroy();
        upstream.destroy();
        links.delete(client);
      };
      for (const socket of [client, upstream]) socket.on("close", end).on("error", end);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const { port } = proxy.address() as AddressInfo;
    const redis = boundOutageWait(
      new Redis(`redis://127.0.0.1:${port}`, { protocol: 2, maxRetriesPerRequest: null, retryStrategy: () => 50 }),
      { waitMs: 300 },
    );
    redis.on("error", () => undefined);
    try {
      await new Promise<void>((resolve) => redis.once("ready", () => resolve()));
      holding = true;
      for (const link of links) link.destroy();
      await new Promise<void>((resolve) => redis.once("close", () => resolve()));
      // The reconnection is up at once, its handshake unanswered: a command waits, then the bound fails it.
      await expect(redis.publish("c", "x")).rejects.toThrow("Redis has been unreachable for 300 ms");
      const ready = new Promise<string>((resolve) => redis.once("ready", () => resolve("ready")));
      holding = false;
      for (const pass of held.splice(0)) pass();
      // Failing the handshake's own commands would have left it in "connect" for good, publishing nothing.
      const stuck = new Promise<string>((resolve) =>
        setTimeout(() => resolve(`still ${redis.status}`), 10_000).unref(),
      );
      expect(await Promise.race([ready, stuck])).toBe("ready");
      expect(await redis.publish("c", "y")).toBe(0);
      expect(redis.options.enableOfflineQueue).toBe(true);
    } finally {
      redis.disconnect();
      proxy.close();
      await server.stop();
    }
  }, 30_000);

  it("makes quit() disconnect while the bound holds the queue off", async () => {
    const server = await startRedisServer();
    const redis = boundOutageWait(new Redis(server.url, { maxRetriesPerRequest: null, retryStrategy: () => 50 }), {
      waitMs: 200,
    });
    redis.on("error", () => undefined);
    try {
      await new Promise<void>((resolve) => redis.once("ready", () => resolve()));
      server.kill();
      await expect(redis.ping()).rejects.toThrow("Redis has been unreachable for 200 ms");
      expect(await redis.quit()).toBe("OK");
      // It tries no more connections (ioredis' refused quit left it reconnecting every 50 ms for good).
      let attempts = 0;
      redis.on("connecting", () => attempts++);
      await server.restart();
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(attempts).toBe(0);
      expect(redis.status).not.toBe("ready");
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});

describe("a Redis that stops answering and keeps its connections open (its process paused)", () => {
  it("fails the commands that wait for it instead of holding them, and they run again once it answers", async () => {
    const server = await startRedisServer();
    // Tally's own settings: no byte for 5 s with commands in flight closes the connection, and the commands that
    // wait for a closed one fail 2 s later (boundOutageWait).
    const redis = createRedis(server.url);
    try {
      await redis.set("k", "1");
      server.kill("SIGSTOP");
      // Before: held for good, as was every request that made one (ioredis has no timeout of its own).
      await expect(notAfter(redis.get("k"), 20_000)).rejects.toThrow(/^Redis has been unreachable for \d+ ms$/);
      server.kill("SIGCONT");
      await expect.poll(() => redis.get("k").catch((err: Error) => err.message), { timeout: 20_000 }).toBe("1");
    } finally {
      server.kill("SIGCONT");
      redis.disconnect();
      await server.stop();
    }
  }, 30_000);

  it("lets an instance's start check go on (it reconnects later, as for a Redis that is down)", async () => {
    const server = await startRedisServer();
    try {
      server.kill("SIGSTOP");
      // Before: the check's handshake waited for good, and the instance never started.
      expect(await notAfter(redisUrlProblem(server.url), 20_000)).toBeNull();
    } finally {
      server.kill("SIGCONT");
      await server.stop();
    }
  }, 30_000);

  it("makes the adapter's subscriber see it stop, and subscribe again once it answers", async () => {
    const server = await startRedisServer();
    // Tally's own socketTimeout (5 s); its pings more often than the 5 s an instance waits between two.
    const { pub, sub } = createAdapterClients(server.url, {}, { pingEveryMs: 100 });
    try {
      const heard: string[] = [];
      sub.on("message", (_channel: string, message: string) => heard.push(message));
      await sub.subscribe("tally-test");
      const closed = new Promise((resolve) => sub.once("close", resolve));
      server.kill("SIGSTOP");
      // Before: subscribed to a Redis that carried nothing, and never told (it sends nothing once subscribed).
      expect(
        await notAfter(
          closed.then(() => "closed"),
          20_000,
        ),
      ).toBe("closed");
      const ready = new Promise((resolve) => sub.once("ready", resolve));
      server.kill("SIGCONT");
      await notAfter(ready, 20_000);
      await expect
        .poll(async () => {
          await pub.publish("tally-test", "back");
          return heard;
        })
        .toContain("back");
    } finally {
      server.kill("SIGCONT");
      pub.disconnect();
      sub.disconnect();
      await server.stop();
    }
  }, 30_000);
});
