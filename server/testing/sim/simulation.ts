import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { ConversationDTO } from "../../contracts/index.ts";
import { createDb, type Db } from "../../db/prisma.ts";
import type { RedisServer } from "../../dev/redis.ts";
import { createRedis } from "../../redis/client.ts";
import { unreadScriptKeys } from "../../redis/keys.ts";
import { rng } from "../random.ts";
import { Instance } from "./instances.ts";
import { SimTab } from "./tab.ts";

/**
 * Model-based simulation of Tally under concurrent traffic and injected faults, against real server processes,
 * one real redis-server and one real PostgreSQL. Used by server/consistency.int.test.ts (bounded) and by
 * `npm run soak` (for minutes). Everything random comes from the seed, so a seed replays the same operations.
 */

export type FaultKind = "flushall" | "redis-restart" | "kill-instance" | "crash-after-commit";
export const FAULTS: FaultKind[] = ["flushall", "redis-restart", "kill-instance", "crash-after-commit"];

export interface SimEnvironment {
  db: Db;
  redis: Redis;
  redisServer: RedisServer;
  instances: Instance[];
  /** Starts with TALLY_FAULT=crash-after-commit: each send through it commits, then kills it. */
  crasher: Instance | null;
  close(): Promise<void>;
}

export async function createSimEnvironment(opts: {
  databaseUrl: string;
  redisServer: RedisServer;
  instances?: number;
  withCrasher?: boolean;
}): Promise<SimEnvironment> {
  const base = { databaseUrl: opts.databaseUrl, redisUrl: opts.redisServer.url };
  const instances = await Promise.all(Array.from({ length: opts.instances ?? 2 }, () => Instance.start(base)));
  const crasher = opts.withCrasher ? await Instance.start({ ...base, crashAfterCommit: true }) : null;
  const db = createDb(opts.databaseUrl, { max: 4 });
  const redis = createRedis(opts.redisServer.url);
  return {
    db,
    redis,
    redisServer: opts.redisServer,
    instances,
    crasher,
    async close() {
      await Promise.allSettled([...instances, ...(crasher ? [crasher] : [])].map((i) => i.stop()));
      await Promise.allSettled([redis.quit(), db.$disconnect()]);
    },
  };
}

export interface RoundOptions {
  seed: number;
  ops: number;
  users?: number;
  groups?: number;
  directs?: number;
  concurrency?: number;
  /** Probability that an operation is a fault (0: none). */
  faultRate?: number;
  faults?: FaultKind[];
  log?: (line: string) => void;
}

export interface RoundReport {
  seed: number;
  ops: number;
  sends: number;
  duplicateSends: number;
  reads: number;
  reconnects: number;
  faults: Record<FaultKind, number>;
  acknowledgedMessages: number;
  /** Acknowledged messages not in the database exactly once. */
  lostMessages: number;
  /** Acknowledged reads whose cursor is no longer in the database. */
  lostReads: number;
  /** Users whose counters (Redis, sync, HTTP, tabs) differ from the database's truth. */
  driftedUsers: number;
  /** Times a tab saw total != sum of its conversation unreads. */
  clientViolations: number;
  problems: string[];
  history: string[];
}

type Op =
  | { kind: "send"; user: number; conv: number; tab: number; dup: boolean }
  | { kind: "read"; user: number; conv: number; tab: number; fraction: number }
  | { kind: "reconnect"; user: number; tab: number; instance: number }
  | { kind: "fault"; fault: FaultKind; instance: number };

interface SimUser {
  name: string;
  id: number;
  token: string;
  tabs: SimTab[];
}

async function http<T>(base: string, path: string, init: RequestInit & { token?: string } = {}): Promise<T> {
  const headers = new Headers(init.headers);
  if (init.token) headers.set("authorization", `Bearer ${init.token}`);
  if (init.body) headers.set("content-type", "application/json");
  const res = await fetch(`${base}${path}`, { ...init, headers });
  const body = (await res.json()) as T & { ok?: boolean };
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Generates the whole operation list up front, so it depends on the seed alone. */
function plan(o: Required<Omit<RoundOptions, "log">>, convsOf: number[][]): Op[] {
  const r = rng(o.seed);
  const ops: Op[] = [];
  for (let i = 0; i < o.ops; i++) {
    if (o.faultRate > 0 && o.faults.length > 0 && r.chance(o.faultRate)) {
      ops.push({ kind: "fault", fault: r.pick(o.faults), instance: r.int(0, 1) });
      continue;
    }
    const user = r.int(0, o.users - 1);
    const convs = convsOf[user]!;
    const tab = r.int(0, 1);
    const x = r.next();
    if (x < 0.5 && convs.length > 0) ops.push({ kind: "send", user, conv: r.pick(convs), tab, dup: r.chance(0.15) });
    else if (x < 0.9 && convs.length > 0)
      ops.push({ kind: "read", user, conv: r.pick(convs), tab, fraction: r.next() });
    else ops.push({ kind: "reconnect", user, tab, instance: r.int(0, 1) });
  }
  return ops;
}

export async function runRound(env: SimEnvironment, options: RoundOptions): Promise<RoundReport> {
  const o = {
    users: 10,
    groups: 3,
    directs: 8,
    concurrency: 6,
    faultRate: 0,
    faults: FAULTS,
    ...options,
  };
  const log = options.log ?? (() => {});
  const r = rng(o.seed ^ 0x5eed);
  const report: RoundReport = {
    seed: o.seed,
    ops: o.ops,
    sends: 0,
    duplicateSends: 0,
    reads: 0,
    reconnects: 0,
    faults: { flushall: 0, "redis-restart": 0, "kill-instance": 0, "crash-after-commit": 0 },
    acknowledgedMessages: 0,
    lostMessages: 0,
    lostReads: 0,
    driftedUsers: 0,
    clientViolations: 0,
    problems: [],
    history: [],
  };
  const violations: string[] = [];
  const note = (line: string) => {
    report.history.push(line);
    log(line);
  };
  const alive = () => env.instances.filter((i) => i.alive);
  const anyUrl = () => (alive()[0] ?? env.instances[0]!).url;

  // Users and conversations.
  const tag = `${o.seed.toString(36)}${randomBytes(2).toString("hex")}`;
  const users: SimUser[] = [];
  for (let i = 0; i < o.users; i++) {
    const name = `sim${tag}_${i}`;
    const { user, token } = await http<{ user: { id: number }; token: string }>(anyUrl(), "/api/users", {
      method: "POST",
      body: JSON.stringify({ name, password: "sim-password-1234" }),
    });
    const tabs = [0, 1].map((t) => new SimTab(`${name}/tab${t}`, token, violations));
    users.push({ name, id: user.id, token, tabs });
  }
  const conversations: ConversationDTO[] = [];
  const create = async (creator: SimUser, members: SimUser[], title?: string) => {
    const { conversation } = await http<{ conversation: ConversationDTO }>(anyUrl(), "/api/conversations", {
      method: "POST",
      token: creator.token,
      body: JSON.stringify({ memberNames: members.map((m) => m.name), ...(title ? { title } : {}) }),
    });
    if (!conversations.some((c) => c.id === conversation.id)) conversations.push(conversation);
  };
  for (let g = 0; g < o.groups; g++) {
    const size = r.int(3, Math.min(6, o.users));
    const members = [...users].sort(() => r.next() - 0.5).slice(0, size);
    await create(members[0]!, members.slice(1), `group ${g}`);
  }
  for (let d = 0; d < o.directs; d++) {
    const a = r.int(0, o.users - 1);
    const b = (a + r.int(1, o.users - 1)) % o.users;
    await create(users[a]!, [users[b]!]);
  }
  const convsOf = users.map((u) => conversations.filter((c) => c.members.some((m) => m.id === u.id)).map((c) => c.id));
  for (const u of users)
    for (const [t, tab] of u.tabs.entries()) await tab.connect(env.instances[t % env.instances.length]!.url);

  // What the model knows: acknowledged sends and reads, and the highest seq seen per conversation.
  const acked = new Map<string, { userId: number; clientMsgId: string; messageId: number }>();
  const ackedReads: { userId: number; conv: number; atLeast: number }[] = [];
  const knownSeq = new Map<number, number>();

  const usable = async (user: SimUser, t: number): Promise<SimTab | null> => {
    const tab = user.tabs[t]!;
    if (tab.connected) return tab;
    const target = alive();
    if (target.length === 0) return null;
    try {
      await tab.connect(r.pick(target).url);
      report.reconnects++;
      return tab;
    } catch {
      return null;
    }
  };

  const sendVia = async (tab: SimTab, user: SimUser, conv: number, clientMsgId: string, label: string) => {
    for (let attempt = 0; attempt < 4; attempt++) {
      try {
        const res = await tab.send(conv, clientMsgId, `${label} #${attempt}`);
        if (res.ok) {
          acked.set(clientMsgId, { userId: user.id, clientMsgId, messageId: res.message.id });
          knownSeq.set(conv, Math.max(knownSeq.get(conv) ?? 0, res.message.seq));
          return res.message.seq;
        }
        if (res.error.code === "invalid" || res.error.code === "forbidden") throw new Error(res.error.message);
      } catch (err) {
        if (err instanceof Error && !/timeout|not connected|operation has timed out/i.test(err.message)) {
          note(`  send ${clientMsgId} failed: ${err.message}`);
        }
      }
      await sleep(150);
      const again = await usable(user, r.int(0, 1));
      if (!again) return null;
      tab = again;
      report.duplicateSends++;
    }
    return null;
  };

  // Faults run one at a time (traffic goes on around them), so every planned fault happens.
  let faultChain: Promise<void> = Promise.resolve();
  const runFault = (op: Extract<Op, { kind: "fault" }>) => {
    faultChain = faultChain.then(() => injectFault(op));
    return faultChain;
  };
  const injectFault = async (op: Extract<Op, { kind: "fault" }>) => {
    report.faults[op.fault]++;
    note(`fault ${op.fault}`);
    try {
      if (op.fault === "flushall") {
        await env.redis.flushall();
      } else if (op.fault === "redis-restart") {
        await env.redisServer.restart();
      } else if (op.fault === "kill-instance") {
        const victim = env.instances[op.instance % env.instances.length]!;
        await victim.kill("SIGKILL");
        await sleep(200);
        await victim.spawn();
      } else if (op.fault === "crash-after-commit" && env.crasher) {
        const sender = users[r.int(0, users.length - 1)]!;
        const conv = convsOf[users.indexOf(sender)]![0];
        if (conv !== undefined) {
          const tab = new SimTab(`${sender.name}/crasher`, sender.token, violations);
          await tab.connect(env.crasher.url);
          const clientMsgId = `crash-${randomBytes(6).toString("hex")}`;
          const exited = env.crasher.exited();
          await tab.send(conv, clientMsgId, "sent through the crashing instance").catch(() => undefined);
          await exited;
          tab.close();
          note(`  crashed after committing ${clientMsgId}; restarting the crashing instance`);
          await env.crasher.spawn();
          // The sender's app retries unacknowledged sends with the same clientMsgId.
          const retry = await usable(sender, 0);
          if (retry) await sendVia(retry, sender, conv, clientMsgId, "retry after crash");
        }
      }
    } catch (err) {
      note(`  fault ${op.fault} hit an error: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  const ops = plan({ ...o, faults: o.faults }, convsOf);
  let next = 0;
  const worker = async () => {
    while (next < ops.length) {
      const i = next++;
      const op = ops[i]!;
      if (op.kind === "fault") {
        await runFault(op);
        continue;
      }
      const user = users[op.user]!;
      if (op.kind === "reconnect") {
        const target = alive();
        if (target.length === 0) continue;
        const tab = user.tabs[op.tab]!;
        tab.close();
        await tab.connect(target[op.instance % target.length]!.url).catch(() => undefined);
        report.reconnects++;
        note(`${i} reconnect ${user.name}/tab${op.tab}`);
        continue;
      }
      const tab = await usable(user, op.tab);
      if (!tab) continue;
      if (op.kind === "send") {
        report.sends++;
        const clientMsgId = `m-${tag}-${i}`;
        const seq = await sendVia(tab, user, op.conv, clientMsgId, `op ${i}`);
        note(`${i} send ${user.name} c${op.conv} -> ${seq ?? "no ack"}`);
        if (op.dup && seq !== null) {
          report.duplicateSends++;
          const again = await sendVia(tab, user, op.conv, clientMsgId, `op ${i} again`);
          // No answer (an instance died meanwhile) proves nothing; a different answer would be a double send.
          if (again !== null && again !== seq)
            report.problems.push(`retry of ${clientMsgId} answered seq ${again}, first ${seq}`);
        }
      } else {
        report.reads++;
        const known = knownSeq.get(op.conv) ?? 0;
        const seq = Math.round(known * op.fraction);
        try {
          const res = await tab.read(op.conv, seq);
          if (res.ok) ackedReads.push({ userId: user.id, conv: op.conv, atLeast: seq });
          note(
            `${i} read ${user.name} c${op.conv} up to ${seq} -> ${res.ok ? res.unread.unreadCount : res.error.code}`,
          );
        } catch {
          note(`${i} read ${user.name} c${op.conv} up to ${seq} -> no ack`);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));

  // Quiesce: every instance up, the outbox drained, every tab connected and synced.
  for (const instance of [...env.instances, ...(env.crasher ? [env.crasher] : [])]) {
    if (!instance.alive) await instance.spawn();
  }
  const deadline = Date.now() + 30_000;
  while ((await env.db.outboxEvent.count()) > 0 && Date.now() < deadline) await sleep(200);
  const pending = await env.db.outboxEvent.count();
  log(`quiesced: outbox ${pending}`);
  if (pending > 0) report.problems.push(`${pending} outbox entries still pending after 30 s`);
  for (const u of users) {
    for (const tab of u.tabs) {
      if (!tab.connected) await tab.connect(r.pick(env.instances).url);
      await tab.sync();
    }
  }

  log("tabs synced");
  // Messages: every acknowledged one is in the database exactly once; seqs have no gaps.
  report.acknowledgedMessages = acked.size;
  for (const a of acked.values()) {
    const rows = await env.db.message.findMany({
      where: { senderId: a.userId, clientMsgId: a.clientMsgId },
      select: { id: true },
    });
    if (rows.length !== 1 || rows[0]!.id !== a.messageId) {
      report.lostMessages++;
      report.problems.push(`acknowledged message ${a.clientMsgId} found ${rows.length} times`);
    }
  }
  for (const c of conversations) {
    const conv = await env.db.conversation.findUniqueOrThrow({ where: { id: c.id }, select: { lastSeq: true } });
    const count = await env.db.message.count({ where: { conversationId: c.id } });
    if (count !== conv.lastSeq)
      report.problems.push(`conversation ${c.id}: lastSeq ${conv.lastSeq} but ${count} messages`);
  }
  // Reads: no cursor below a read the server acknowledged.
  for (const a of ackedReads) {
    const m = await env.db.membership.findUniqueOrThrow({
      where: { userId_conversationId: { userId: a.userId, conversationId: a.conv } },
      select: { lastReadSeq: true },
    });
    if (m.lastReadSeq < a.atLeast) {
      report.lostReads++;
      report.problems.push(`user ${a.userId} c${a.conv}: cursor ${m.lastReadSeq} below acknowledged read ${a.atLeast}`);
    }
  }
  // Counters: Redis, sync, HTTP and every tab equal the truth computed from the database.
  for (const u of users) {
    const memberships = await env.db.membership.findMany({
      where: { userId: u.id },
      select: { conversationId: true, lastReadSeq: true, conversation: { select: { lastSeq: true } } },
    });
    const truth = new Map(memberships.map((m) => [m.conversationId, m.conversation.lastSeq - m.lastReadSeq]));
    const truthTotal = [...truth.values()].reduce((a, b) => a + b, 0);
    const problems: string[] = [];
    const compare = (where: string, counts: Map<number, number>, total: number) => {
      for (const [conv, n] of truth)
        if ((counts.get(conv) ?? 0) !== n) problems.push(`${where} c${conv}: ${counts.get(conv) ?? 0} != ${n}`);
      if (total !== truthTotal) problems.push(`${where} total ${total} != ${truthTotal}`);
    };
    const snap = await http<{ conversations: ConversationDTO[]; totalUnread: number }>(anyUrl(), "/api/conversations", {
      token: u.token,
    });
    compare("http", new Map(snap.conversations.map((c) => [c.id, c.unreadCount])), snap.totalUnread);
    const [meta, unread] = unreadScriptKeys(u.id);
    const raw = await env.redis.tallySnapshot(meta, unread);
    if (raw.length === 1) problems.push(`redis state missing or unrepaired (${raw[0]})`);
    else {
      const [, , total, ...flat] = raw as [string, number, number, ...string[]];
      const counts = new Map<number, number>();
      for (let i = 0; i + 1 < flat.length; i += 2) counts.set(Number(flat[i]), Number(flat[i + 1]));
      compare("redis", counts, total);
    }
    for (const tab of u.tabs) compare(tab.name, tab.counts, tab.total);
    if (problems.length > 0) {
      report.driftedUsers++;
      report.problems.push(`${u.name}: ${problems.slice(0, 4).join("; ")}`);
    }
  }
  report.clientViolations = violations.length;
  report.problems.push(...violations.slice(0, 10));
  for (const u of users) for (const tab of u.tabs) tab.close();
  return report;
}
