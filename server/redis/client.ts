import { Redis, type RedisOptions } from "ioredis";
import { defineScripts } from "./scripts.ts";

/** A command connection with Tally's scripts defined. */
export function createRedis(url: string, options: RedisOptions = {}): Redis {
  return defineScripts(new Redis(url, { maxRetriesPerRequest: 2, ...options }));
}

/**
 * Pub/sub connections for the Socket.IO Redis adapter. RESP2 keeps the adapter on the protocol it was
 * written against (ioredis 6 defaults to RESP3).
 */
export function createAdapterClients(url: string): { pub: Redis; sub: Redis } {
  const pub = new Redis(url, { protocol: 2 });
  return { pub, sub: pub.duplicate() };
}
