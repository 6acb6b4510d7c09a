import { randomUUID } from "node:crypto";
import { io, type Socket } from "socket.io-client";
import type {
  ClientToServerEvents,
  ConversationDTO,
  ServerToClientEvents,
  SessionResponse,
} from "../../contracts/index.ts";
import { createSessionService } from "../../sessions/sessions.service.ts";
import type { Db } from "../../db/prisma.ts";
import { sleep } from "../lock.ts";
import { percentile, round } from "../measure.ts";
import type { Instance } from "./services.ts";

type ClientSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

export interface RateResult {
  offeredPerSec: number;
  seconds: number;
  sent: number;
  acked: number;
  failed: number;
  /** Sends whose recipient saw the matching unread:changed. */
  delivered: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Every send acknowledged and delivered, with p99 under the target. */
  held: boolean;
}

export interface EndToEndResult {
  pairs: number;
  targetP99Ms: number;
  rates: RateResult[];
  /** The highest offered rate held with p99 under the target, or 0. */
  highestHeldPerSec: number;
}

export const BENCH_PASSWORD = "bench-password-1234";

export async function post<T>(url: string, body: unknown, token?: string): Promise<T> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as T & { ok: boolean; error?: { message: string } };
  if (!json.ok) throw new Error(`${url}: ${json.error?.message ?? res.status}`);
  return json;
}

export function connect(url: string, token: string): Promise<ClientSocket> {
  const socket: ClientSocket = io(url, {
    auth: { token },
    transports: ["websocket"],
    forceNew: true,
    reconnection: false,
  });
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("connect_error", reject);
  });
}

interface Pair {
  conversationId: number;
  sender: ClientSocket;
  recipient: ClientSocket;
  /** seq → when the recipient's badge reached it. */
  arrived: Map<number, number>;
}

/**
 * Latency from `message:send` on one instance to the recipient's `unread:changed` on the other, at fixed offered
 * rates (open loop: sends go out on schedule whether or not earlier ones were answered), spread over `pairs`
 * direct conversations. The recipient never reads, so its unread count in a conversation equals the seq of the
 * newest message it has been told about: the push that first reaches count n is message n's.
 */
export async function measureEndToEnd(opts: {
  a: Instance;
  b: Instance;
  rates: number[];
  seconds: number;
  pairs?: number;
  targetP99Ms?: number;
  log?: (line: string) => void;
}): Promise<EndToEndResult> {
  const pairsCount = opts.pairs ?? 20;
  const target = opts.targetP99Ms ?? 50;
  const run = randomUUID().slice(0, 8);
  const pairs: Pair[] = [];
  for (let i = 0; i < pairsCount; i++) {
    // Half the senders on A with their recipients on B, half the other way round: every push crosses instances.
    const [from, to] = i % 2 === 0 ? [opts.a, opts.b] : [opts.b, opts.a];
    const s = await post<SessionResponse>(`${from.url}/api/users`, {
      name: `e2e_${run}_s${i}`,
      password: BENCH_PASSWORD,
    });
    const r = await post<SessionResponse>(`${to.url}/api/users`, {
      name: `e2e_${run}_r${i}`,
      password: BENCH_PASSWORD,
    });
    const { conversation } = await post<{ conversation: ConversationDTO }>(
      `${from.url}/api/conversations`,
      { memberNames: [r.user.name] },
      s.token,
    );
    const pair: Pair = {
      conversationId: conversation.id,
      sender: await connect(from.url, s.token),
      recipient: await connect(to.url, r.token),
      arrived: new Map(),
    };
    pair.recipient.on("unread:changed", (u) => {
      if (u.conversationId === pair.conversationId && !pair.arrived.has(u.unreadCount)) {
        pair.arrived.set(u.unreadCount, performance.now());
      }
    });
    pairs.push(pair);
  }

  const rates: RateResult[] = [];
  let failures = 0;
  try {
    for (const rate of [0, ...opts.rates]) {
      // Rate 0 is a short warm-up (JIT, connection pools, prepared statements); it is not reported.
      const seconds = rate === 0 ? 1 : opts.seconds;
      const offered = rate === 0 ? 100 : rate;
      const total = Math.round(offered * seconds);
      const sends: { pair: Pair; at: number; seq?: number; failed?: boolean }[] = [];
      const acks: Promise<void>[] = [];
      const started = performance.now();
      while (sends.length < total) {
        const due = Math.min(total, Math.floor(((performance.now() - started) * offered) / 1000) + 1);
        while (sends.length < due) {
          const pair = pairs[sends.length % pairs.length]!;
          const send: (typeof sends)[number] = { pair, at: performance.now() };
          sends.push(send);
          acks.push(
            pair.sender
              .timeout(10_000)
              .emitWithAck("message:send", {
                conversationId: pair.conversationId,
                clientMsgId: randomUUID(),
                content: "bench",
              })
              .then(
                (res) => {
                  if (res.ok) send.seq = res.message.seq;
                  else send.failed = true;
                },
                () => void (send.failed = true),
              ),
          );
        }
        await sleep(2);
      }
      await Promise.all(acks);
      await sleep(300);
      if (rate === 0) continue;
      const latencies = sends
        .filter((s) => s.seq !== undefined && s.pair.arrived.has(s.seq))
        .map((s) => s.pair.arrived.get(s.seq!)! - s.at)
        .sort((x, y) => x - y);
      const acked = sends.filter((s) => s.seq !== undefined).length;
      const failed = sends.length - acked;
      const p99 = percentile(latencies, 99);
      const result: RateResult = {
        offeredPerSec: rate,
        seconds,
        sent: sends.length,
        acked,
        failed,
        delivered: latencies.length,
        p50Ms: round(percentile(latencies, 50), 1),
        p99Ms: round(p99, 1),
        maxMs: round(latencies.at(-1) ?? 0, 1),
        // A superseded push (seq n+1 counted before n arrived) leaves n without a sample; allow 1%.
        held: failed === 0 && latencies.length >= 0.99 * sends.length && p99 < target,
      };
      rates.push(result);
      opts.log?.(
        `  e2e ${rate}/s: p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms, delivered ${result.delivered}/${result.sent}`,
      );
      // Past saturation every further rate only queues more: stop after two rates that fell over.
      const collapsed = result.delivered < 0.99 * result.sent || result.p50Ms > 500;
      failures = collapsed ? failures + 1 : 0;
      if (failures >= 2) break;
    }
  } finally {
    for (const p of pairs) {
      p.sender.disconnect();
      p.recipient.disconnect();
    }
  }
  const held = rates.filter((r) => r.held).map((r) => r.offeredPerSec);
  return { pairs: pairsCount, targetP99Ms: target, rates, highestHeldPerSec: held.length ? Math.max(...held) : 0 };
}

export interface FanoutResult {
  members: number;
  /** One message applied to every member's counters: the unread service's applyMany (one pipeline). */
  applyP50Ms: number;
  applyP99Ms: number;
  /** `message:send` to its acknowledgement: commit, fan-out to every member's counters, pushes. */
  sendP50Ms: number;
  sendP99Ms: number;
  /** applyP50Ms per member, in microseconds. */
  applyUsPerMember: number;
}

/** Groups of each size: applying one message to every member, and sending one through the app. */
export async function measureFanout(opts: {
  db: Db;
  a: Instance;
  sizes: number[];
  repeats: number;
  applyMany: (
    events: { userId: number; conversationId: number; seenSeq: number; readSeq: number }[],
  ) => Promise<unknown>;
}): Promise<FanoutResult[]> {
  const run = randomUUID().slice(0, 8);
  const results: FanoutResult[] = [];
  for (const size of opts.sizes) {
    const names = Array.from({ length: size }, (_, i) => `fan_${run}_${size}_${i}`);
    await opts.db.user.createMany({ data: names.map((name) => ({ name })) });
    const users = await opts.db.user.findMany({ where: { name: { in: names } }, select: { id: true, name: true } });
    const conversation = await opts.db.conversation.create({
      data: { kind: "group", title: `fan-out ${size}`, memberships: { create: users.map((u) => ({ userId: u.id })) } },
      select: { id: true },
    });
    const events = (seq: number) =>
      users.map((u) => ({ userId: u.id, conversationId: conversation.id, seenSeq: seq, readSeq: 0 }));
    // The first call per user rebuilds its missing state from the database; not what is measured.
    await opts.applyMany(events(1));
    const apply: number[] = [];
    for (let i = 0; i < opts.repeats; i++) {
      const t = performance.now();
      await opts.applyMany(events(i + 2));
      apply.push(performance.now() - t);
    }

    const sender = users[0]!;
    // Made in the database above, without a password: its session is issued directly.
    const session = await createSessionService({ db: opts.db }).createSession(sender.id);
    const socket = await connect(opts.a.url, session.token);
    const send: number[] = [];
    try {
      for (let i = 0; i < opts.repeats; i++) {
        const t = performance.now();
        const res = await socket.timeout(30_000).emitWithAck("message:send", {
          conversationId: conversation.id,
          clientMsgId: randomUUID(),
          content: "fan-out",
        });
        if (!res.ok) throw new Error(res.error.message);
        send.push(performance.now() - t);
      }
    } finally {
      socket.disconnect();
    }
    apply.sort((x, y) => x - y);
    send.sort((x, y) => x - y);
    const applyP50 = percentile(apply, 50);
    results.push({
      members: size,
      applyP50Ms: round(applyP50, 2),
      applyP99Ms: round(percentile(apply, 99), 2),
      sendP50Ms: round(percentile(send, 50), 2),
      sendP99Ms: round(percentile(send, 99), 2),
      applyUsPerMember: round((applyP50 * 1000) / size, 1),
    });
  }
  return results;
}
