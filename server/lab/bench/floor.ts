import type { Socket } from "socket.io-client";
import type { LoadTransport } from "./load.ts";
import { connect, disconnectPairs } from "./send-to-badge.ts";
import type { Instance } from "./services.ts";

/** A message through the floor relay: message `n` of conversation `k`, for user `to`. */
export interface FloorMessage {
  to: number;
  k: number;
  n: number;
  content: string;
  /** Stored and committed before it is relayed (floor-relay.ts). */
  durable?: boolean;
}

export interface FloorClientEvents {
  /** Answered with nothing once relayed, or with why not (a durable message that was not stored). */
  send: (message: FloorMessage, ack: (error?: string) => void) => void;
}

export interface FloorServerEvents {
  arrived: (arrival: { k: number; n: number }) => void;
}

/** Where the floor + commit's user ids begin: far above the plain floor's (two per conversation, from 1). */
const DURABLE_USERS = 1_000_000;

/**
 * The floor relay (floor-relay.ts) as the load generator's transport, in Tally's topology: conversation k's sender
 * on one relay and its recipient on the other, alternating, so every message crosses the adapter. The sender
 * numbers its messages itself; nothing on the relay counts. `durable`: each message is committed to the database
 * before the relay pushes it (the "floor + commit" system).
 */
export async function openFloorTransport(
  a: Instance,
  b: Instance,
  conversations: number,
  { durable = false }: { durable?: boolean } = {},
): Promise<LoadTransport> {
  let listener = (_k: number, _n: number): void => undefined;
  type FloorSocket = Socket<FloorServerEvents, FloorClientEvents>;
  const pairs: { sender: FloorSocket; recipient: FloorSocket; recipientId: number; last: number }[] = [];
  for (let k = 0; k < conversations; k++) {
    const [from, to] = k % 2 === 0 ? [a, b] : [b, a];
    // Users of their own for each transport on the same relays, so neither hears the other's arrivals.
    const recipientId = (durable ? DURABLE_USERS : 0) + 2 * k + 2;
    const sender = await connect<FloorServerEvents, FloorClientEvents>(from.url, String(recipientId - 1));
    const recipient = await connect<FloorServerEvents, FloorClientEvents>(to.url, String(recipientId));
    recipient.on("arrived", ({ k: of, n }) => listener(of, n));
    pairs.push({ sender, recipient, recipientId, last: 0 });
  }
  return {
    conversations,
    async send(k) {
      const pair = pairs[k]!;
      const n = ++pair.last;
      const error = await pair.sender
        .timeout(10_000)
        .emitWithAck("send", { to: pair.recipientId, k, n, content: "bench", ...(durable ? { durable } : {}) });
      if (error) throw new Error(`floor: message ${n} of conversation ${k}: ${error}`);
      return n;
    },
    onArrival: (l) => void (listener = l),
    close: () => disconnectPairs(pairs),
  };
}
