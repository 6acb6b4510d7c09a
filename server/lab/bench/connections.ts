import { randomUUID } from "node:crypto";
import type { ConversationDTO, SessionResponse } from "../../contracts/index.ts";
import { sleep } from "../lock.ts";
import { percentile, round } from "../measure.ts";
import type { Instance } from "./services.ts";
import { BENCH_PASSWORD, connect, post } from "./send-to-badge.ts";

export interface InstanceMemory {
  name: string;
  sockets: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  heapBeforeMb: number;
  heapAfterMb: number;
  /** (RSS after − before) / sockets: what one idle connected socket costs the instance. */
  rssPerSocketKb: number;
  heapPerSocketKb: number;
}

export interface ConnectionsResult {
  sockets: number;
  users: number;
  /** Wall time to open them all, and the rate. */
  connectSeconds: number;
  connectsPerSec: number;
  /** Held this long (past at least one Socket.IO heartbeat) before the sends. */
  heldSeconds: number;
  /** Sockets that dropped while held or while sending: must be 0. */
  dropped: number;
  instances: InstanceMemory[];
  /** The modest traffic through them: one sender per pair of users, each recipient on all of its sockets. */
  traffic: {
    offeredPerSec: number;
    seconds: number;
    sent: number;
    acked: number;
    /** Pushes each recipient socket got (sent × sockets per user when every tab heard every message). */
    pushes: number;
    expectedPushes: number;
    ackP50Ms: number;
    ackP99Ms: number;
    pushP50Ms: number;
    pushP99Ms: number;
  };
}

/** One sample of the instance's own /metrics (loopback scrape): resident memory, V8 heap, sockets. */
async function memoryOf(instance: Instance): Promise<{ rss: number; heap: number; sockets: number }> {
  const text = await (await fetch(`${instance.url}/metrics`)).text();
  const value = (name: string) =>
    Number(/^(\S+) (\S+)$/m.exec(text.split("\n").find((l) => l.startsWith(`${name} `)) ?? "")?.[2] ?? NaN);
  return {
    rss: value("process_resident_memory_bytes"),
    heap: value("nodejs_heap_size_used_bytes"),
    sockets: value("tally_connected_sockets"),
  };
}

/** Runs `tasks` with at most `limit` at a time. */
async function pool<T>(count: number, limit: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, count) }, async () => {
      for (let i = next++; i < count; i = next++) out[i] = await task(i);
    }),
  );
  return out;
}

const mb = (bytes: number) => round(bytes / 1048576, 1);

/**
 * How many idle connected sockets two instances hold, and what each costs: signs up `sockets / perUser` users,
 * opens `perUser` sockets for each (alternating instances, as a balancer would spread them), holds them past a
 * Socket.IO heartbeat, reads each instance's memory from its /metrics before and after, then sends at a modest
 * rate between pairs of users and counts the pushes every recipient socket got.
 */
export async function measureConnections(opts: {
  instances: [Instance, Instance];
  sockets: number;
  perUser?: number;
  holdSeconds?: number;
  rate?: number;
  seconds?: number;
  log?: (line: string) => void;
}): Promise<ConnectionsResult> {
  const perUser = opts.perUser ?? 10;
  const users = Math.ceil(opts.sockets / perUser);
  const run = randomUUID().slice(0, 6);
  const [a, b] = opts.instances;
  opts.log?.(`connections: signing up ${users} users…`);
  const sessions = await pool(users, 8, (i) =>
    post<SessionResponse>(`${a.url}/api/users`, { name: `c_${run}_${i}`, password: BENCH_PASSWORD }),
  );
  // Pairs (0,1), (2,3), …: the first of each sends to the second in their direct conversation.
  const conversations = await pool(Math.floor(users / 2), 8, (p) =>
    post<{ conversation: ConversationDTO }>(
      `${b.url}/api/conversations`,
      { memberNames: [sessions[2 * p + 1]!.user.name] },
      sessions[2 * p]!.token,
    ),
  );
  // Let the sign-ups' garbage go before the baseline.
  await sleep(3000);
  const before = await Promise.all(opts.instances.map(memoryOf));

  opts.log?.(`connections: opening ${users * perUser} sockets…`);
  const started = performance.now();
  const sockets = await pool(users * perUser, 200, (i) => {
    const user = Math.floor(i / perUser);
    return connect(opts.instances[i % 2]!.url, sessions[user]!.token);
  });
  const connectSeconds = (performance.now() - started) / 1000;
  let dropped = 0;
  for (const s of sockets) s.on("disconnect", () => dropped++);

  const holdSeconds = opts.holdSeconds ?? 30;
  opts.log?.(`connections: ${sockets.length} open in ${round(connectSeconds, 1)} s; holding ${holdSeconds} s…`);
  await sleep(holdSeconds * 1000);
  const after = await Promise.all(opts.instances.map(memoryOf));

  // The traffic: each pair's first user sends from its first socket; every socket of the second user counts the
  // unread:changed that reaches the new seq.
  const rate = opts.rate ?? 100;
  const seconds = opts.seconds ?? 10;
  const pushLatencies: number[] = [];
  const ackLatencies: number[] = [];
  const sentAt = new Map<string, number>();
  let pushes = 0;
  conversations.forEach(({ conversation }, p) => {
    for (let k = 0; k < perUser; k++) {
      sockets[(2 * p + 1) * perUser + k]?.on("unread:changed", (u) => {
        const at = sentAt.get(`${u.conversationId}:${u.unreadCount}`);
        if (u.conversationId !== conversation.id || at === undefined) return;
        pushes++;
        pushLatencies.push(performance.now() - at);
      });
    }
  });
  opts.log?.(`connections: sending ${rate}/s for ${seconds} s through them…`);
  const total = rate * seconds;
  const sentCount = new Map<number, number>();
  let acked = 0;
  const acks: Promise<void>[] = [];
  const t0 = performance.now();
  for (let n = 0; n < total; n++) {
    const wait = t0 + (n * 1000) / rate - performance.now();
    if (wait > 0) await sleep(wait);
    const p = n % conversations.length;
    const conversationId = conversations[p]!.conversation.id;
    const seq = (sentCount.get(p) ?? 0) + 1;
    sentCount.set(p, seq);
    const at = performance.now();
    sentAt.set(`${conversationId}:${seq}`, at);
    acks.push(
      sockets[2 * p * perUser]!.timeout(10_000)
        .emitWithAck("message:send", { conversationId, clientMsgId: randomUUID(), content: "bench" })
        .then(
          (res) => {
            if (!res.ok) return;
            acked++;
            ackLatencies.push(performance.now() - at);
          },
          () => undefined,
        ),
    );
  }
  await Promise.all(acks);
  await sleep(1000);
  // Counted before this side hangs up: only drops nobody asked for.
  const droppedUnasked = dropped;
  for (const s of sockets) s.disconnect();
  pushLatencies.sort((x, y) => x - y);
  ackLatencies.sort((x, y) => x - y);

  return {
    sockets: sockets.length,
    users,
    connectSeconds: round(connectSeconds, 1),
    connectsPerSec: Math.round(sockets.length / connectSeconds),
    heldSeconds: holdSeconds,
    dropped: droppedUnasked,
    instances: opts.instances.map((instance, i) => {
      const [x, y] = [before[i]!, after[i]!];
      const n = Math.max(1, y.sockets - x.sockets);
      return {
        name: instance.name,
        sockets: y.sockets,
        rssBeforeMb: mb(x.rss),
        rssAfterMb: mb(y.rss),
        heapBeforeMb: mb(x.heap),
        heapAfterMb: mb(y.heap),
        rssPerSocketKb: round((y.rss - x.rss) / n / 1024, 1),
        heapPerSocketKb: round((y.heap - x.heap) / n / 1024, 1),
      };
    }),
    traffic: {
      offeredPerSec: rate,
      seconds,
      sent: total,
      acked,
      pushes,
      expectedPushes: acked * perUser,
      ackP50Ms: round(percentile(ackLatencies, 50), 1),
      ackP99Ms: round(percentile(ackLatencies, 99), 1),
      pushP50Ms: round(percentile(pushLatencies, 50), 1),
      pushP99Ms: round(percentile(pushLatencies, 99), 1),
    },
  };
}
