import { createAdapter, createShardedAdapter } from "@socket.io/redis-adapter";
import type { AdapterClients } from "../redis/client.ts";

/**
 * Socket.IO across instances: Redis 7's sharded pub/sub on a cluster (a room's broadcasts reach only the shard
 * its channel hashes to and the instances subscribed there, one channel per room with local sockets), classic
 * pub/sub on a single server.
 */
/** The adapter's channel prefix (the emitter of `npm run reconcile` must use the same). */
export const adapterKey = (prefix: string) => `${prefix}socket.io`;

export function redisAdapter(clients: AdapterClients) {
  return clients.sharded
    ? createShardedAdapter(clients.pub, clients.sub, { subscriptionMode: "dynamic" })
    : createAdapter(clients.pub, clients.sub, { key: adapterKey(clients.prefix) });
}
