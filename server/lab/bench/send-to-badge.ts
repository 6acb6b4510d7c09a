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
import { percentile, round } from "../measure.ts";
import { cpuBetween, sampleCpu, type CpuTarget, type WindowCpu } from "./cpu.ts";
import { LoadGenerator, type LoadMode, type LoadResult, type LoadTransport } from "./load.ts";
import { groupsBetween, stagesBetween, type GroupWindow, type SendMetrics, type StageWindow } from "./stages.ts";
import type { Instance } from "./services.ts";

type ClientSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

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

/** A WebSocket-only client that never reconnects; Tally's events unless told (the floor relay's). */
export function connect<S extends object = ServerToClientEvents, C extends object = ClientToServerEvents>(
  url: string,
  token: string,
): Promise<Socket<S, C>> {
  const socket: Socket<S, C> = io(url, {
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

/**
 * Tally as the load generator's transport: conversation k is a direct conversation whose sender is on one instance
 * and whose recipient is on the other (alternating), so every push crosses instances through the Redis adapter.
 * Message n is the one the server numbered n. The recipient never reads, so its unread count is the newest
 * message it has heard of: a push that takes the count from c to c' tells it of every message in c+1…c' (one
 * that overtook the push of its predecessor delivers both).
 */
export async function openTallyTransport(a: Instance, b: Instance, conversations: number): Promise<LoadTransport> {
  const run = randomUUID().slice(0, 8);
  let listener = (_k: number, _n: number): void => undefined;
  const pairs: { conversationId: number; sender: ClientSocket; recipient: ClientSocket }[] = [];
  for (let k = 0; k < conversations; k++) {
    const [from, to] = k % 2 === 0 ? [a, b] : [b, a];
    const s = await post<SessionResponse>(`${from.url}/api/users`, {
      name: `e2e_${run}_s${k}`,
      password: BENCH_PASSWORD,
    });
    const r = await post<SessionResponse>(`${to.url}/api/users`, {
      name: `e2e_${run}_r${k}`,
      password: BENCH_PASSWORD,
    });
    const { conversation } = await post<{ conversation: ConversationDTO }>(
      `${from.url}/api/conversations`,
      { memberNames: [r.user.name] },
      s.token,
    );
    const recipient = await connect(to.url, r.token);
    let heard = 0;
    recipient.on("unread:changed", (u) => {
      if (u.conversationId !== conversation.id) return;
      while (heard < u.unreadCount) listener(k, ++heard);
    });
    pairs.push({ conversationId: conversation.id, sender: await connect(from.url, s.token), recipient });
  }
  return {
    conversations,
    async send(k) {
      const pair = pairs[k]!;
      const res = await pair.sender.timeout(10_000).emitWithAck("message:send", {
        conversationId: pair.conversationId,
        clientMsgId: randomUUID(),
        content: "bench",
      });
      if (!res.ok) throw new Error(res.error.message);
      return res.message.seq;
    },
    onArrival: (l) => void (listener = l),
    close: () => disconnectPairs(pairs),
  };
}

/** Closes the sockets of a transport's conversations. */
export function disconnectPairs(pairs: { sender: { disconnect(): void }; recipient: { disconnect(): void } }[]): void {
  for (const p of pairs) {
    p.sender.disconnect();
    p.recipient.disconnect();
  }
}

/** What the end-to-end part compares: Tally, or the floor relay, with the process trees that serve it. */
export interface EndToEndSystem {
  name: string;
  transport: LoadTransport;
  /** Their CPU time per delivered message is this system's total. */
  cpu: CpuTarget[];
  /** The system's send-stage and group-size histograms (Tally's /metrics), read at each window's edges. */
  stages?: () => Promise<SendMetrics>;
}

/** One window of one system: its load, and the CPU each of its processes spent over it (null without /proc). */
export interface EndToEndWindow extends LoadResult {
  cpu: WindowCpu | null;
  /** Where the system's sends spent their time in this window, by stage (a system with `stages` only). */
  stages?: StageWindow[];
  /** How many sends each PostgreSQL statement stored in this window (a system with `stages` only). */
  groups?: GroupWindow;
}

export interface EndToEndRow {
  mode: LoadMode;
  offeredPerSec: number;
  /** One per system, in the order given. */
  results: EndToEndWindow[];
}

export interface EndToEndResult {
  systems: string[];
  conversations: number;
  seconds: number;
  targetP99Ms: number;
  rows: EndToEndRow[];
  /** Per system: the highest open-loop rate held (LoadResult.held), or 0. */
  highestHeldPerSec: number[];
}

/** The stages of server/metrics/metrics.ts' send histogram, in the order a send passes them. */
const SEND_STAGES = ["commit", "counters", "push"];

/**
 * Latency from a send on one instance to its arrival at the recipient on the other, for each system, mode and
 * offered rate, with the systems' windows back to back so that each row compares measurements seconds apart. Each
 * window also samples the CPU time of the system's processes and of this process (the load generator). Every
 * rate is offered to every system, also past the point where one fell over: a send unanswered for 10 s counts as
 * failed, and the next window waits until what it left behind has arrived (LoadGenerator.run).
 */
export async function measureEndToEnd(opts: {
  systems: EndToEndSystem[];
  modes: readonly LoadMode[];
  rates: number[];
  seconds: number;
  /** Offered to each system before the windows: 2000 messages by default. */
  warmUp?: { perSec: number; seconds: number };
  targetP99Ms?: number;
  log?: (line: string) => void;
}): Promise<EndToEndResult> {
  const targetP99Ms = opts.targetP99Ms ?? 50;
  const drainMs = 5_000;
  const generators = opts.systems.map((s) => new LoadGenerator(s.transport));
  const warmUp = opts.warmUp ?? { perSec: 500, seconds: 4 };
  // A warm-up of each, not reported: connection pools, prepared statements, the adapter's subscriptions, and V8's
  // optimizing compiler, which takes a few thousand calls to compile the hot path (after 100 messages, `perf` found
  // its threads busy in the first window and the send path still running unoptimized code).
  for (const g of generators) await g.run({ mode: "open", ...warmUp, drainMs, targetP99Ms });

  const rows: EndToEndRow[] = [];
  for (const mode of opts.modes) {
    for (const rate of opts.rates) {
      const row: EndToEndRow = { mode, offeredPerSec: rate, results: [] };
      for (const [i, system] of opts.systems.entries()) {
        const stagesBefore = await system.stages?.();
        const before = sampleCpu(system.cpu);
        const load = await generators[i]!.run({ mode, perSec: rate, seconds: opts.seconds, drainMs, targetP99Ms });
        const after = sampleCpu(system.cpu);
        const stagesAfter = await system.stages?.();
        const stages =
          stagesBefore && stagesAfter ? stagesBetween(stagesBefore.stages, stagesAfter.stages, SEND_STAGES) : undefined;
        const groups = stagesBefore && stagesAfter ? groupsBetween(stagesBefore.groups, stagesAfter.groups) : undefined;
        const cpu = cpuBetween(
          before,
          after,
          system.cpu.map((t) => t.name),
          load.delivered,
        );
        row.results.push({
          ...load,
          cpu: cpu.processes.every((p) => p.ms === null) ? null : cpu,
          ...(stages ? { stages } : {}),
          ...(groups ? { groups } : {}),
        });
        opts.log?.(
          `  ${system.name} ${mode} ${rate}/s: p50 ${load.p50Ms} ms, p99 ${load.p99Ms} ms, delivered ${load.delivered}/${load.offered}` +
            (cpu.totalMsPerMessage === null ? "" : `, ${cpu.totalMsPerMessage.toFixed(3)} ms CPU per message`),
        );
      }
      rows.push(row);
    }
  }
  const highestHeldPerSec = opts.systems.map((_, i) =>
    Math.max(0, ...rows.filter((r) => r.mode === "open" && r.results[i]?.held).map((r) => r.offeredPerSec)),
  );
  return {
    systems: opts.systems.map((s) => s.name),
    conversations: Math.min(...opts.systems.map((s) => s.transport.conversations)),
    seconds: opts.seconds,
    targetP99Ms,
    rows,
    highestHeldPerSec,
  };
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
