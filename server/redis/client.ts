import { Redis, type RedisOptions } from "ioredis";
import { logger } from "../log.ts";
import { defineScripts } from "./scripts.ts";

/** ioredis reconnects by itself; without a listener it would print every failed attempt as unhandled. */
function logErrors(redis: Redis, role: string): Redis {
  let last = 0;
  redis.on("error", (err: Error) => {
    const now = Date.now();
    if (now - last < 5000) return; // one line per outage, not one per retry
    last = now;
    logger.warn({ role, err: err.message }, "redis connection error; reconnecting");
  });
  return redis;
}

/** A command connection with Tally's scripts defined. */
export function createRedis(url: string, options: RedisOptions = {}): Redis {
  return logErrors(defineScripts(new Redis(url, { maxRetriesPerRequest: 2, ...options })), "commands");
}

/**
 * Pub/sub connections for the Socket.IO Redis adapter. RESP2 keeps the adapter on the protocol it was
 * written against (ioredis 6 defaults to RESP3).
 */
export function createAdapterClients(url: string): { pub: Redis; sub: Redis } {
  const pub = logErrors(new Redis(url, { protocol: 2 }), "adapter-pub");
  return { pub, sub: logErrors(pub.duplicate(), "adapter-sub") };
}
