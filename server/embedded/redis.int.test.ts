import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { afterEach, describe, expect, inject, it } from "vitest";
import { REDIS_SERVER_MISSING, startRedisServer, type RedisServer } from "./redis.ts";

const servers: RedisServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

async function start(port?: number): Promise<RedisServer> {
  const server = await startRedisServer(port === undefined ? {} : { port });
  servers.push(server);
  return server;
}

// One short-lived client per call: a killed server must not leave a retrying client behind.
async function withClient<T>(url: string, work: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

describe("startRedisServer", () => {
  it("the global setup provides its own redis-server", async () => {
    const url = inject("redisUrl");
    expect(url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(url).not.toMatch(/:6379$/);
    expect(await withClient(url, (redis) => redis.ping())).toBe("PONG");
  });

  it("survives being killed and started again on the same port", async () => {
    const first = await start();
    await withClient(first.url, (redis) => redis.set("k", "v"));
    first.kill();
    const second = await start(first.port);
    expect(second.url).toBe(first.url);
    expect(await withClient(second.url, (redis) => redis.get("k"))).toBeNull();
    await first.stop();

    await withClient(second.url, (redis) => redis.set("k", "v"));
    second.kill("SIGTERM");
    await second.restart();
    expect(await withClient(second.url, (redis) => redis.get("k"))).toBeNull();
  });

  it("will not mistake another server on its port for its own", async () => {
    const owner = await start();
    await expect(startRedisServer({ port: owner.port })).rejects.toThrow(/Address already in use/i);
    expect(await withClient(owner.url, (redis) => redis.ping())).toBe("PONG");
  });

  it("says how to install redis-server when it is missing", async () => {
    const empty = await mkdtemp(path.join(os.tmpdir(), "tally-no-redis-"));
    const saved = process.env.PATH;
    process.env.PATH = empty;
    try {
      await expect(startRedisServer()).rejects.toThrow(REDIS_SERVER_MISSING);
    } finally {
      process.env.PATH = saved;
      await rm(empty, { recursive: true, force: true });
    }
    expect(REDIS_SERVER_MISSING).toBe(
      "redis-server was not found on PATH. Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis) or set REDIS_URL to an existing Redis.",
    );
  });
});
