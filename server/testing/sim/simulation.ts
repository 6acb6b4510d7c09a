/**
 * Model-based simulation of Tally under concurrent traffic and injected faults, against real server processes, one
 * real redis-server (or a real Redis Cluster, with HAProxy in front of the instances) and one real PostgreSQL. Used
 * by server/consistency.int.test.ts and server/consistency-cluster.int.test.ts (bounded) and by `npm run soak
 * [-- --cluster]` (for minutes). On a cluster the faults are masters SIGKILLed (a replica promoted), slots resharded
 * mid-traffic, FLUSHALL on every master, instances killed behind the balancer (their tabs reconnect through it) and
 * crashes after commit.
 *
 * Every tab is the page's own client: `createChatStore` with the socket binding and API client the page uses
 * (browser-tab.ts), over a real socket.io-client connection. Users send (some messages mentioning other members, or
 * @all), read (by opening a conversation in a focused tab, so the store decides what to read), mute and unmute, mark
 * as unread, leave groups, delete conversations, create new ones, switch instances and reload, while faults hit: FLUSHALL, Redis restarts, SIGKILLed instances and crashes right after a
 * commit. Afterwards every tab goes offline and every instance restarts, so nothing can rebuild or repair Redis
 * behind the checks' back; once the outbox is drained Redis is read directly (inspect.lua) and compared with the
 * truth computed from the database, then the tabs come back and must show that truth too. A snapshot shows the
 * truth whatever the pushes did, so a short coda without faults (each user sends in each conversation) then checks
 * that every tab reaches its user's Redis version by pushes alone and still shows the truth.
 *
 * Determinism. Everything the simulation decides comes from the seed: user names and conversation titles, who is in
 * which conversation, and the plan, the whole list of operations, generated up front by a model that tracks
 * membership. Each round starts on a fresh database and an empty Redis, so the same seed gives the same names, ids
 * and client message ids, and `TEST_SEED=<n>` (or `npm run soak -- --seed <n>`) replays the same operations.
 * What still varies between two runs of one seed is timing:
 * - `concurrency` workers take operations in plan order, but operations in flight at once reach the server in
 *   either order (a send and a read of the same conversation, a send and a delete);
 * - faults run one at a time while traffic goes on (an operation waits until the faults planned before it have
 *   started), so which commands a FLUSHALL or a SIGKILL catches varies;
 * - conversations created by operations in flight at once get their ids in the order they reach the server (the
 *   plan names them c0, c1, …; the printed plan shows which id each got);
 * - pushes through the Redis adapter interleave with acknowledgements, and the store's timers (a retry after a
 *   missing acknowledgement, a resync backoff, the read of a message that arrives in an open conversation) and
 *   socket.io's reconnection fire at wall-clock times.
 * The checks do not depend on any of it: they compare with the database's truth, never with an expected sequence of
 * states. That is sound because the invariants hold for every interleaving: the Lua scripts are idempotent and
 * order-insensitive (max-registers), every change is committed before it is applied and is replayed from the
 * outbox when the apply was lost, and a client applies versioned absolute values or an atomic snapshot. A replay
 * that must also reproduce an interleaving can take the overlap out with `concurrency: 1` (`--concurrency 1`).
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createApi, type Api } from "../../../components/lib/api.ts";
import type { ConversationDTO } from "../../contracts/index.ts";
import { mentionedUserIds } from "../../contracts/mentions.ts";
import { createDb, type Db } from "../../db/prisma.ts";
import { startBalancer, type Balancer } from "../../embedded/haproxy.ts";
import { freePort } from "../../embedded/ports.ts";
import type { LocalRedisCluster, Reclaimed } from "../../embedded/redis-cluster.ts";
import type { RedisServer } from "../../embedded/redis.ts";
import { createRedis, type RedisClient, type RedisTarget } from "../../redis/client.ts";
import { unreadScriptKeys, userKeys } from "../../redis/keys.ts";
import { hash, NO_STATE, states } from "../../unread/reconcile.ts";
import { createUnreadService, type MembershipRegisters } from "../../unread/unread.service.ts";
import { createTestDatabase, type TestDatabase } from "../db.ts";
import { rng } from "../random.ts";
import { readThroughFailover } from "../redis.ts";
import { BrowserTab, type TabUser } from "./browser-tab.ts";
import { startInstance, type Instance } from "./instances.ts";
import { Journal } from "./journal.ts";

const FAULT_KINDS = [
  "flushall",
  "redis-restart",
  "kill-instance",
  "crash-after-commit",
  "kill-master",
  "reshard",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
/** A count of 0 for every kind of fault. */
export const noFaults = () => Object.fromEntries(FAULT_KINDS.map((f) => [f, 0])) as Record<FaultKind, number>;
/** The faults of a single redis-server. */
export const FAULTS: FaultKind[] = ["flushall", "redis-restart", "kill-instance", "crash-after-commit"];
/**
 * The faults of a Redis Cluster: a master SIGKILLed mid-traffic (its replica promoted, the old master back as a
 * replica), slots migrated mid-traffic (`redis-cli --cluster reshard`), FLUSHALL on every master, and the instance
 * faults.
 */
export const CLUSTER_FAULTS: FaultKind[] = [
  "flushall",
  "kill-master",
  "reshard",
  "kill-instance",
  "crash-after-commit",
];

const PASSWORD = "sim-password-1234";

export interface SimEnvironment {
  redis: RedisClient;
  /** The simulation's own redis-server, or null on a cluster. */
  redisServer: RedisServer | null;
  /** The simulation's own Redis Cluster, or null on a single redis-server. */
  cluster: LocalRedisCluster | null;
  instances: Instance[];
  /** HAProxy in front of the instances, when asked for: tabs then connect through it, never to an instance. */
  balancer: Balancer | null;
  /**
   * Runs with TALLY_FAULT=crash-after-commit: each send through it commits, then kills it. Null until
   * `crasherUp()` first starts it; down again after each crash and at the end of each round.
   */
  crasher: Instance | null;
  hasCrasher: boolean;
  /** Starts the crashing instance on the current database (in crash mode) unless it runs. */
  crasherUp(): Promise<Instance>;
  /** The current round's database. */
  db: Db;
  databaseUrl: string;
  /**
   * Makes the next round start from nothing: a fresh database, an empty Redis (the simulation's own server) and
   * every instance restarted on them. The first call after creating the environment has nothing to do.
   */
  freshRound(): Promise<void>;
  /** FLUSHALL on the simulation's redis-server, or on every master of its cluster. */
  flushall(): Promise<void>;
  /**
   * Resolves once the balancer (if any) routes to a live instance again: after every instance restarted, HAProxy
   * answers 503 until a health check (every second) has seen one back.
   */
  routable(): Promise<void>;
  close(): Promise<void>;
}

export async function createSimEnvironment(opts: {
  /** A superuser URL of the PostgreSQL cluster: each round gets a database of its own in it. */
  adminUrl: string;
  /** One of the two: the simulation's own redis-server or Redis Cluster, which it flushes between rounds. */
  redisServer?: RedisServer;
  cluster?: LocalRedisCluster;
  instances?: number;
  withCrasher?: boolean;
  /** Put HAProxy in front of the instances (the crashing one stays outside: a test reaches it on purpose). */
  balancer?: boolean;
}): Promise<SimEnvironment> {
  const target: RedisTarget = opts.cluster
    ? { clusterNodes: opts.cluster.nodes }
    : { url: (opts.redisServer ?? missing("a redis-server or a Redis Cluster")).url };
  let database: TestDatabase = await createTestDatabase(opts.adminUrl);
  const dataRoot = await mkdtemp(path.join(os.tmpdir(), "tally-sim-"));
  const base = { databaseUrl: database.url, redis: target, dataRoot };
  const instances = await Promise.all(Array.from({ length: opts.instances ?? 2 }, () => startInstance(base)));
  const balancer = opts.balancer
    ? await startBalancer({
        port: await freePort(),
        instances: instances.map((i, n) => ({ name: `i${n}`, port: i.port })),
        dir: path.join(dataRoot, "haproxy"),
      })
    : null;
  const all = () => [...instances, ...(env.crasher ? [env.crasher] : [])];
  const redis = createRedis(target);
  let used = false;
  const env: SimEnvironment = {
    redis,
    redisServer: opts.redisServer ?? null,
    cluster: opts.cluster ?? null,
    balancer,
    instances,
    crasher: null,
    hasCrasher: opts.withCrasher ?? false,
    db: createDb(database.url, { max: 4 }),
    databaseUrl: database.url,
    async crasherUp() {
      if (!env.hasCrasher) throw new Error("this environment has no crashing instance");
      const options = { ...base, databaseUrl: env.databaseUrl, crashAfterCommit: true };
      if (!env.crasher) env.crasher = await startInstance(options);
      else if (!env.crasher.alive)
        await env.crasher.restart({ DATABASE_URL: env.databaseUrl, TALLY_FAULT: "crash-after-commit" });
      return env.crasher;
    },
    async freshRound() {
      if (!used) {
        used = true;
        return;
      }
      // Stopped the way a deploy stops them (SIGTERM, SIGKILL after 10 s).
      await Promise.all(all().map((i) => i.stop()));
      await env.db.$disconnect();
      await database.drop();
      database = await createTestDatabase(opts.adminUrl);
      // This redis-server (or cluster) was started for the simulation alone.
      await env.flushall();
      await Promise.all(instances.map((i) => i.restart({ DATABASE_URL: database.url })));
      await env.routable();
      env.db = createDb(database.url, { max: 4 });
      env.databaseUrl = database.url;
    },
    async flushall() {
      if (opts.cluster) await opts.cluster.flushall();
      else await redis.flushall();
    },
    async routable() {
      if (!balancer) return;
      const deadline = Date.now() + 30_000;
      while ((await fetch(`${balancer.url}/api/health`).catch(() => null))?.status !== 200) {
        if (Date.now() > deadline) throw new Error("HAProxy routed to no live instance within 30 s");
        await sleep(100);
      }
    },
    async close() {
      await balancer?.stop();
      await Promise.allSettled(all().map((i) => i.stop()));
      await Promise.allSettled([redis.quit(), env.db.$disconnect()]);
      await database.drop().catch(() => undefined);
      await rm(dataRoot, { recursive: true, force: true });
    },
  };
  return env;
}

function missing(what: string): never {
  throw new Error(`createSimEnvironment: needs ${what}`);
}

export interface RoundOptions {
  seed: number;
  ops: number;
  users?: number;
  tabsPerUser?: number;
  groups?: number;
  directs?: number;
  concurrency?: number;
  /** Probability that an operation is a fault (0: none). */
  faultRate?: number;
  faults?: FaultKind[];
  /**
   * Besides the random faults, one fault of every kind in `faults`, spread evenly through the plan, so a bounded
   * round meets each whatever the seed.
   */
  everyFault?: boolean;
  log?: (line: string) => void;
  /**
   * Every `stallMs` a round runs once its tabs are open, `onStall` hears where it is: the last phase it logged, the
   * operations started and not finished, and every tab's connection, sync and commands in flight. A round that
   * hangs then says why.
   */
  stallMs?: number;
  onStall?: (report: string) => void;
  /**
   * Every tab's conversation list page (the store's `listPage`; the page's own when unset): small, a tab lists a
   * few conversations and scrolls for the rest before it acts on one, while it counts all of them.
   */
  listPage?: number;
}

export interface RoundReport {
  seed: number;
  ops: number;
  sends: number;
  /** Sends whose content mentions someone (`@name` of another member, or `@all`). */
  mentionSends: number;
  /** Reads the server acknowledged (the stores decide when to read). */
  reads: number;
  /** Mutes and unmutes the server acknowledged. */
  mutes: number;
  /** Marks as unread the server acknowledged. */
  marks: number;
  leaves: number;
  /** People added to groups, acknowledged. */
  adds: number;
  /** Members removed from groups by their creators, acknowledged. */
  removals: number;
  /** Messages their senders deleted, acknowledged. */
  unsends: number;
  deletes: number;
  creates: number;
  reconnects: number;
  /** Pages of older conversations the tabs loaded (`conversation:list` answered). */
  pages: number;
  faults: Record<FaultKind, number>;
  /**
   * Faults the harness could not inject ("fault <i> <kind>: <error>", e.g. a resharding killed after 120 s): the
   * round goes on without them, and its plan shows each as `error: …`.
   */
  faultErrors: string[];
  acknowledgedMessages: number;
  /** Acknowledged messages not in the database exactly once (their conversation not deleted). */
  lostMessages: number;
  /** Acknowledged reads whose cursor is no longer in the database. */
  lostReads: number;
  /** Acknowledged mutes or marks the database no longer holds (a lower muteVersion or markVersion, another value). */
  lostStates: number;
  /** Users whose counters (in Redis, or in any of their tabs) differ from the database's truth. */
  driftedUsers: number;
  driftedUserIds: number[];
  /** Users with no Redis state at the check (allowed only after FLUSHALL or a Redis restart). */
  usersWithoutState: number;
  /**
   * Things a tab showed that must never be shown: totals breaking checkUnreadInvariants, a count dropping without a
   * read, …
   */
  clientViolations: number;
  problems: string[];
  /** The users, conversations and operations the seed gave, each operation with what became of it. */
  plan: string[];
}

/** What a round lost and what it found, in one line. */
export function roundSummary(r: RoundReport): string {
  return (
    `lost messages ${r.lostMessages}, lost reads ${r.lostReads}, lost mutes/marks ${r.lostStates}, ` +
    `drifted users ${r.driftedUsers}, client violations ${r.clientViolations}, problems ${r.problems.length}`
  );
}

interface PlannedConversation {
  kind: "direct" | "group";
  creator: number;
  members: number[];
  title?: string;
}

type Op =
  /** `unsend`: the user deletes their newest acknowledged message there not deleted yet, if any. */
  | { kind: "open" | "leave" | "delete" | "mark" | "unsend"; user: number; tab: number; conv: number }
  /** `mention`: an `@name` of another member (any case) or `@all`, added to the content. */
  | { kind: "send"; user: number; tab: number; conv: number; mention?: string }
  | { kind: "mute"; user: number; tab: number; conv: number; muted: boolean }
  /** `user` adds `other` to group `conv`: someone who is not in it and never left it. */
  | { kind: "add"; user: number; tab: number; conv: number; other: number }
  /** `user`, the group's creator, removes `other`, another member, from group `conv`. */
  | { kind: "remove"; user: number; tab: number; conv: number; other: number }
  | { kind: "blur"; user: number; tab: number }
  | { kind: "reconnect" | "reload"; user: number; tab: number; instance: number }
  | { kind: "create"; user: number; tab: number; conv: number; conversation: PlannedConversation }
  | { kind: "fault"; fault: FaultKind; instance: number; user: number; conv: number | null };

interface Scenario {
  users: string[];
  conversations: PlannedConversation[];
  ops: Op[];
}

type PlanOptions = Required<Omit<RoundOptions, "log" | "concurrency" | "stallMs" | "onStall" | "listPage">> & {
  instances: number;
};

/**
 * The users, the conversations they start with and every operation, from the seed alone. A model of membership
 * keeps each operation possible when planned: sends and reads go to conversations the user is in, leaves to their
 * groups, deletes to their direct conversations and the groups they created. (Operations in flight at once may
 * still meet a conversation that is gone by then; the server refuses those, as it would a person's.)
 */
export function scenario(o: PlanOptions): Scenario {
  const r = rng(o.seed);
  const users = Array.from({ length: o.users }, (_, i) => `s${o.seed}-u${i}`);
  const shuffled = (items: number[]) => {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = r.int(0, i);
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  };
  const everyone = users.map((_, i) => i);
  /** `joined`: when each member added later came, as an operation's place in the plan (those who started it: 0). */
  const convs: (PlannedConversation & { gone: boolean; left?: Set<number>; joined?: Map<number, number> })[] = [];
  const directBetween = (a: number, b: number) =>
    convs.some((c) => !c.gone && c.kind === "direct" && c.members.includes(a) && c.members.includes(b));
  const group = (creator: number, others: number[]): PlannedConversation => ({
    kind: "group",
    creator,
    members: [creator, ...others],
    title: `s${o.seed} group ${convs.filter((c) => c.kind === "group").length}`,
  });
  for (let g = 0; g < o.groups; g++) {
    const [creator, ...others] = shuffled(everyone).slice(0, r.int(3, Math.min(6, o.users)));
    convs.push({ ...group(creator!, others), gone: false });
  }
  for (let d = 0; d < o.directs; d++) {
    const a = r.int(0, o.users - 1);
    const b = (a + r.int(1, o.users - 1)) % o.users;
    if (!directBetween(a, b)) convs.push({ kind: "direct", creator: a, members: [a, b], gone: false });
  }
  const initial: PlannedConversation[] = convs.map(({ kind, creator, members, title }) => ({
    kind,
    creator,
    members: [...members],
    ...(title ? { title } : {}),
  }));

  const ops: Op[] = [];
  // What the plan's own mutes leave each (user, conversation) at: a mute op mutes an unmuted one, unmutes a muted one.
  const mutedInPlan = new Set<string>();
  const mention = (user: number, conv: number): string | undefined => {
    const c = convs[conv]!;
    const others = c.members.filter((m) => m !== user);
    if (c.kind === "group" && r.chance(0.25)) return r.chance(0.5) ? "@all" : "@ALL";
    if (others.length === 0) return undefined;
    const name = users[r.pick(others)]!;
    return `@${r.chance(0.5) ? name.toUpperCase() : name}`;
  };
  const of = (user: number) => convs.flatMap((c, i) => (!c.gone && c.members.includes(user) ? [i] : []));
  for (let i = 0; i < o.ops; i++) {
    if (o.faultRate > 0 && o.faults.length > 0 && r.chance(o.faultRate)) {
      const user = r.int(0, o.users - 1);
      const mine = of(user);
      ops.push({
        kind: "fault",
        fault: r.pick(o.faults),
        instance: r.int(0, o.instances - 1),
        user,
        conv: mine.length > 0 ? r.pick(mine) : null,
      });
      continue;
    }
    const user = r.int(0, o.users - 1);
    const tab = r.int(0, o.tabsPerUser - 1);
    const mine = of(user);
    const groups = mine.filter((c) => convs[c]!.kind === "group");
    const deletable = mine.filter((c) => convs[c]!.kind === "direct" || convs[c]!.creator === user);
    const x = r.next();
    if (x < 0.36 && mine.length > 0) {
      const conv = r.pick(mine);
      const named = r.chance(0.3) ? mention(user, conv) : undefined;
      ops.push({ kind: "send", user, tab, conv, ...(named ? { mention: named } : {}) });
    } else if (x < 0.56 && mine.length > 0) ops.push({ kind: "open", user, tab, conv: r.pick(mine) });
    else if (x < 0.61 && mine.length > 0) {
      // Half the time one the user muted, if any, so that unmutes are as common as the mutes that undo them.
      const muted = mine.filter((c) => mutedInPlan.has(`${user}:${c}`));
      const conv = muted.length > 0 && r.chance(0.5) ? r.pick(muted) : r.pick(mine);
      const k = `${user}:${conv}`;
      const mute = !mutedInPlan.has(k);
      if (mute) mutedInPlan.add(k);
      else mutedInPlan.delete(k);
      ops.push({ kind: "mute", user, tab, conv, muted: mute });
    } else if (x < 0.66 && mine.length > 0) ops.push({ kind: "mark", user, tab, conv: r.pick(mine) });
    else if (x < 0.69 && mine.length > 0) ops.push({ kind: "unsend", user, tab, conv: r.pick(mine) });
    else if (x < 0.74) ops.push({ kind: "blur", user, tab });
    else if (x < 0.82) ops.push({ kind: "reconnect", user, tab, instance: r.int(0, o.instances - 1) });
    else if (x < 0.85) ops.push({ kind: "reload", user, tab, instance: r.int(0, o.instances - 1) });
    else if (x < 0.9) {
      const others = everyone.filter((u) => u !== user);
      const lonely = others.filter((u) => !directBetween(user, u));
      const planned: PlannedConversation =
        lonely.length > 0 && r.chance(0.5)
          ? { kind: "direct", creator: user, members: [user, r.pick(lonely)] }
          : group(user, shuffled(others).slice(0, r.int(2, Math.min(4, others.length))));
      ops.push({ kind: "create", user, tab, conv: convs.length, conversation: planned });
      convs.push({ ...planned, members: [...planned.members], gone: false });
    } else if (x < 0.925 && groups.length > 0) {
      // Someone not in the group who never left it: a person who left cannot be added back.
      const conv = r.pick(groups);
      const c = convs[conv]!;
      const outside = everyone.filter((u) => !c.members.includes(u) && !c.left?.has(u));
      if (outside.length === 0) ops.push({ kind: "blur", user, tab });
      else {
        const other = r.pick(outside);
        ops.push({ kind: "add", user, tab, conv, other });
        c.members = [...c.members, other];
        (c.joined ??= new Map()).set(other, i + 1);
      }
    } else if (x < 0.96 && groups.length > 0) {
      // A third of these the creator removing another member, where the user created one with anyone else left in it;
      // otherwise the user leaves. Either way that member cannot come back.
      const own = groups.filter((c) => convs[c]!.creator === user && convs[c]!.members.length > 1);
      const removing = own.length > 0 && r.chance(1 / 3);
      const conv = removing ? r.pick(own) : r.pick(groups);
      const c = convs[conv]!;
      const other = removing ? r.pick(c.members.filter((m) => m !== user)) : user;
      if (other === user) ops.push({ kind: "leave", user, tab, conv });
      else ops.push({ kind: "remove", user, tab, conv, other });
      c.members = c.members.filter((m) => m !== other);
      (c.left ??= new Set()).add(other);
      // The owner leaving hands the group on, as the server does (conversations.service heirOf): to the member who
      // came first, the lowest user (the oldest account) among equals. The plan cannot know which seq someone added
      // before any message joined at (the server counts them among the first); a removal or a deletion the server
      // then refuses as not the owner's is refused as a person's would be.
      if (c.creator === user && other === user) c.creator = heirOf(c.members, c.joined);
    } else if (deletable.length > 0) {
      const conv = r.pick(deletable);
      ops.push({ kind: "delete", user, tab, conv });
      convs[conv]!.gone = true;
    } else ops.push({ kind: "blur", user, tab });
  }
  if (o.everyFault) {
    // Inserted, not replacing anything: a fault changes nothing the membership model tracks.
    const kinds = o.faults;
    for (let k = kinds.length - 1; k >= 0; k--) {
      const at = Math.round(((k + 1) * ops.length) / (kinds.length + 1));
      ops.splice(at, 0, {
        kind: "fault",
        fault: kinds[k]!,
        instance: r.int(0, o.instances - 1),
        user: r.int(0, o.users - 1),
        conv: null,
      });
    }
  }
  return { users, conversations: initial, ops };
}

/** The member who came first (`joined`, absent: from the start), the lowest user among equals; -1 for nobody. */
export function heirOf(members: readonly number[], joined: ReadonlyMap<number, number> | undefined): number {
  const order = (m: number) => joined?.get(m) ?? 0;
  return [...members].sort((a, b) => order(a) - order(b) || a - b)[0] ?? -1;
}

function describeConversation(c: PlannedConversation, names: string[]): string {
  const others = c.members.filter((m) => m !== c.creator).map((m) => names[m]);
  return `${c.kind === "group" ? `group "${c.title}"` : "direct"} by ${names[c.creator]} with ${others.join(", ")}`;
}

function describe(op: Op, names: string[]): string {
  const who = "user" in op ? names[op.user] : "";
  switch (op.kind) {
    case "fault":
      return op.fault === "crash-after-commit"
        ? `fault crash-after-commit: ${who} sends in c${op.conv ?? "-"} through the crashing instance`
        : `fault ${op.fault}${op.fault === "kill-instance" ? ` i${op.instance}` : ""}${
            op.fault === "kill-master" || op.fault === "reshard" ? ` (pick ${op.user})` : ""
          }`;
    case "blur":
      return `${who}/t${op.tab} blur`;
    case "reconnect":
    case "reload":
      return `${who}/t${op.tab} ${op.kind} to i${op.instance}`;
    case "create":
      return `${who}/t${op.tab} create c${op.conv}: ${describeConversation(op.conversation, names)}`;
    case "send":
      return `${who}/t${op.tab} send c${op.conv}${op.mention ? ` "${op.mention}"` : ""}`;
    case "mute":
      return `${who}/t${op.tab} ${op.muted ? "mute" : "unmute"} c${op.conv}`;
    case "mark":
      return `${who}/t${op.tab} mark-unread c${op.conv}`;
    case "add":
      return `${who}/t${op.tab} add ${names[op.other]} to c${op.conv}`;
    case "remove":
      return `${who}/t${op.tab} remove ${names[op.other]} from c${op.conv}`;
    default:
      return `${who}/t${op.tab} ${op.kind} c${op.conv}`;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An operation's outcome while it runs (what a stall report lists). */
const RUNNING = "running";

/** Polls `ready` until it holds or `ms` have passed; the deadline is generous, never what a test waits for. */
async function until(ready: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await ready()) return true;
    if (Date.now() > deadline) return false;
    await sleep(25);
  }
}

/** The page's API client for calls made outside a tab (signing up, creating the first conversations). */
function apiAt(url: string, token?: string): Api {
  return createApi((path, init) => {
    const headers = new Headers(init.headers);
    headers.set("origin", new URL(url).origin);
    if (token) headers.set("authorization", `Bearer ${token}`);
    return fetch(`${url}${path}`, { ...init, headers });
  });
}

/** What a round keeps running until its end: its tabs' sockets and its stall report. */
interface Leftovers {
  tabs: BrowserTab[];
  stallTimer: NodeJS.Timeout | undefined;
}

export async function runRound(env: SimEnvironment, options: RoundOptions): Promise<RoundReport> {
  // A round that throws (its caller reports it failed and may go on) must not leave tabs reconnecting to the next
  // round's instances, nor a stall report about itself.
  const leftovers: Leftovers = { tabs: [], stallTimer: undefined };
  try {
    return await playRound(env, options, leftovers);
  } finally {
    clearInterval(leftovers.stallTimer);
    for (const tab of leftovers.tabs) tab.close();
  }
}

async function playRound(env: SimEnvironment, options: RoundOptions, leftovers: Leftovers): Promise<RoundReport> {
  const o = {
    users: 10,
    tabsPerUser: 2,
    groups: 3,
    directs: 8,
    concurrency: 6,
    faultRate: 0,
    faults: env.cluster ? CLUSTER_FAULTS : FAULTS,
    everyFault: false,
    ...options,
  };
  let phase = "starting";
  const log = (line: string) => {
    phase = line;
    options.log?.(line);
  };
  await env.freshRound();
  log("fresh database, empty Redis");
  const plan = scenario({ ...o, instances: env.instances.length });
  const journal = new Journal();
  const outcomes: string[] = plan.ops.map(() => "not run");
  const report: RoundReport = {
    seed: o.seed,
    ops: o.ops,
    sends: 0,
    mentionSends: 0,
    reads: 0,
    mutes: 0,
    marks: 0,
    leaves: 0,
    adds: 0,
    removals: 0,
    unsends: 0,
    deletes: 0,
    creates: 0,
    reconnects: 0,
    pages: 0,
    faults: noFaults(),
    faultErrors: [],
    acknowledgedMessages: 0,
    lostMessages: 0,
    lostReads: 0,
    lostStates: 0,
    driftedUsers: 0,
    driftedUserIds: [],
    usersWithoutState: 0,
    clientViolations: 0,
    problems: [],
    plan: [],
  };
  // Behind the balancer a page knows only its address; HAProxy picks the instance, and another once that one dies.
  const lb = env.balancer?.url;
  const instanceUrl = (i: number) => lb ?? env.instances[i % env.instances.length]!.url;
  const liveUrl = (preferred?: string) => {
    if (lb) return lb;
    const live = env.instances.filter((i) => i.alive);
    return live.find((i) => i.url === preferred)?.url ?? (live[0] ?? env.instances[0]!).url;
  };
  // The address a page's HTTP requests reach: its own instance, or through the load balancer a live one.
  const route = (url: string) => (url === env.crasher?.url && env.crasher.alive ? url : liveUrl(url));

  // Users, their first conversations and their tabs, one after another so that ids follow the plan.
  const users: (TabUser & { tabs: BrowserTab[] })[] = [];
  for (const [i, name] of plan.users.entries()) {
    const res = await apiAt(instanceUrl(i)).signUp({ name, password: PASSWORD });
    if (!res.ok) throw new Error(`sign-up of ${name} failed: ${res.error.message}`);
    users.push({ id: res.user.id, name, token: res.token, tabs: [] });
  }
  const ids: (number | undefined)[] = [];
  for (const c of plan.conversations) {
    const creator = users[c.creator]!;
    const res = await apiAt(instanceUrl(0), creator.token).createConversation({
      memberNames: c.members.filter((m) => m !== c.creator).map((m) => users[m]!.name),
      ...(c.title ? { title: c.title } : {}),
    });
    if (!res.ok || !res.conversation) throw new Error(`creating a conversation failed: ${JSON.stringify(res)}`);
    ids.push(res.conversation.id);
  }
  for (const [u, user] of users.entries())
    for (let t = 0; t < o.tabsPerUser; t++)
      user.tabs.push(new BrowserTab({ name: `u${u}.t${t}`, user, journal, route, listPage: o.listPage }));
  const tabs = users.flatMap((u) => u.tabs);
  leftovers.tabs = tabs;
  const started = Date.now();
  // Unref'd: it must never keep the process alive (runRound clears it however the round ends).
  const stallTimer = options.onStall
    ? setInterval(() => {
        const running = outcomes.flatMap((outcome, i) => (outcome === RUNNING ? [`${i} ${plan.ops[i]!.kind}`] : []));
        options.onStall!(
          `seed ${o.seed}: still running after ${Math.round((Date.now() - started) / 1000)} s, after "${phase}"; ` +
            `operations running: ${running.join(", ") || "none"}; ` +
            // A hung round never returns its report, so what its faults met so far is said here.
            `faults not injected so far: ${report.faultErrors.join(" | ") || "none"}; ` +
            `tabs: ${tabs.map((t) => t.describe()).join("; ")}`,
        );
      }, options.stallMs ?? 60_000).unref()
    : undefined;
  leftovers.stallTimer = stallTimer;
  await Promise.all(users.flatMap((user, u) => user.tabs.map((tab, t) => tab.load(instanceUrl(u + t)))));
  if (!(await until(() => tabs.every((t) => t.settled), 30_000))) throw new Error("tabs did not connect");
  log(`seed ${o.seed}: ${users.length} users, ${ids.length} conversations, ${plan.ops.length} operations`);

  // An operation on a conversation the plan creates waits for the operation that creates it.
  const creating = new Map<number, Promise<unknown>>();
  const conversationOf = async (k: number) => {
    await creating.get(k);
    const id = ids[k];
    if (id === undefined) throw new Skip(`c${k} was not created`);
    return id;
  };
  const settle = (calls: Promise<unknown>[]) => Promise.allSettled(calls);
  /**
   * Scrolls `tab`'s list to conversation `id` before acting on it, as a person does. A row that does not come may be
   * a direct conversation someone else started that nobody has written in yet: hidden from the user (hiddenFrom),
   * so the UI offers no way to act on it, and the operation is skipped; anything else is acted on as a link would.
   */
  const showOrSkip = async (tab: BrowserTab, userId: number, id: number) => {
    if (await tab.showConversation(id)) return;
    const hidden = await env.db.membership.count({
      where: { userId, conversationId: id, hidden: true, conversation: { lastSeq: 0 } },
    });
    if (hidden > 0) throw new Skip(`#${id} is hidden from ${tab.name}'s user: nobody has written in it yet`);
  };
  /**
   * A reload of the tab while its message was queued: the dead page's promise never settles, and the next page
   * restores the queue from the tab's sessionStorage and sends the message with its clientMsgId. The operation ends
   * when that page has it stored or refused, so traffic is over when the last operation is.
   */
  const handedOver = async (tab: BrowserTab, id: number, clientMsgId: string): Promise<string> => {
    const waiting = () =>
      tab.store.getState().pending[id]?.some((p) => p.clientMsgId === clientMsgId && p.status !== "refused") ?? false;
    if (!(await until(() => tab.settled && !waiting(), 60_000))) {
      report.problems.push(`${clientMsgId}: still queued 60 s after its page reloaded`);
      return `${clientMsgId}: still queued after the reload`;
    }
    const stored = tab.store.getState().messages[id]?.items.some((m) => m.clientMsgId === clientMsgId) ?? false;
    return `${clientMsgId}: the page reloaded; the next page's queue ${stored ? "had it acknowledged" : "dropped or refused it"}`;
  };

  // Faults run one at a time, so every planned fault happens, and traffic goes on around them; an operation does
  // not start before the faults planned ahead of it have, so traffic cannot run out from under the faults.
  let faultChain: Promise<unknown> = Promise.resolve();
  let faultsStarted: Promise<unknown> = Promise.resolve();
  // A fault counts once it has run: one that found nothing to do (no crashing instance, no conversation) does not.
  const injectFault = async (i: number, op: Extract<Op, { kind: "fault" }>): Promise<string> => {
    let outcome: string;
    try {
      outcome = await runFault(i, op);
    } catch (err) {
      // A skip (the conversation a crash needs was never created) is a planned outcome, not a failed injection.
      if (!(err instanceof Skip)) report.faultErrors.push(`fault ${i} ${op.fault}: ${String(err)}`);
      throw err;
    }
    if (!outcome.startsWith("skipped")) report.faults[op.fault]++;
    return outcome;
  };
  const runFault = async (i: number, op: Extract<Op, { kind: "fault" }>): Promise<string> => {
    if (op.fault === "flushall") {
      journal.dataLoss = true;
      await env.flushall();
      return "done";
    }
    if (op.fault === "redis-restart") {
      if (!env.redisServer) return "skipped: no single redis-server";
      journal.dataLoss = true;
      await env.redisServer.restart();
      return "done";
    }
    if (op.fault === "kill-master" || op.fault === "reshard") {
      if (!env.cluster) return "skipped: no Redis Cluster";
      // State may go missing: a promoted replica's state is fenced, so is a migrated user's (includes/fence.lua).
      journal.dataLoss = true;
      const masters = (await env.cluster.describe())
        .filter((n) => n.role === "master" && !n.failed && n.slots > 0)
        .sort((a, b) => a.port - b.port);
      const pick = (k: number) => masters[k % masters.length]!;
      if (op.fault === "kill-master") {
        const failover = await env.cluster.killMaster(pick(op.user).port);
        const { killed, promoted } = failover;
        const back = await env.cluster.restartNode(killed);
        const note = (reclaimed: Reclaimed[]) =>
          reclaimed.map((r) => ` (${r.port} claimed too few slots: ${r.slots.join(", ")} assigned to it)`).join("");
        const forced = failover.forced ? " with CLUSTER FAILOVER TAKEOVER (none was elected)" : "";
        return `master ${killed} killed, replica ${promoted} promoted${forced}${note(failover.reclaimed)}, ${killed} back as a replica${note(back.reclaimed)}`;
      }
      const from = pick(op.user);
      const to = pick(op.user + 1);
      const slots = Math.min(256, from.slots);
      await env.cluster.reshard({ slots, fromPort: from.port, toPort: to.port });
      return `${slots} slots moved from ${from.port} to ${to.port}`;
    }
    if (op.fault === "kill-instance") {
      const victim = env.instances[op.instance % env.instances.length]!;
      await victim.kill("SIGKILL");
      await sleep(200);
      await victim.restart();
      return "killed and restarted";
    }
    if (!env.hasCrasher) return "skipped: no crashing instance";
    // A fault everyFault inserted names no conversation: the user's first one at the time, if any.
    const mine = Object.keys(users[op.user]!.tabs[0]!.store.getState().conversations).map(Number);
    const id = op.conv === null ? Math.min(...mine) : await conversationOf(op.conv);
    if (!Number.isFinite(id)) return "skipped: the user is in no conversation";
    const crasher = await env.crasherUp();
    // A tab whose load balancer sent it to the crashing instance, and sends it elsewhere once that one is gone.
    const tab = new BrowserTab({
      name: `u${op.user}.crash${i}`,
      user: users[op.user]!,
      journal,
      route,
      failover: () => liveUrl(),
      listPage: o.listPage,
    });
    try {
      await tab.load(crasher.url);
      if (!(await until(() => tab.settled, 10_000))) return "skipped: the tab did not connect to the crashing instance";
      const exited = crasher.exited();
      const { value: sent } = tab.act((s) => {
        s.setFocused(true);
        s.openConversation(id);
        return s.sendMessage(id, `op ${i}: sent through the crashing instance`);
      });
      const clientMsgId = tab.lastId;
      const first = await Promise.race([exited.then(() => "crashed" as const), sent]);
      if (first !== "crashed") return `skipped: ${clientMsgId} answered before any crash (${String(first)})`;
      // The store retries with the same clientMsgId, over the connection the failover opened. (The crashing
      // instance stays down until the next crash fault needs it.)
      const ok = await sent;
      return `${clientMsgId} committed, the instance died; the store's retry was ${ok ? "acknowledged" : "not acknowledged"}`;
    } finally {
      tab.close();
    }
  };

  const create = async (tab: BrowserTab, op: Extract<Op, { kind: "create" }>): Promise<string> => {
    report.creates++;
    const { members, title } = op.conversation;
    const memberNames = members.filter((m) => m !== op.user).map((m) => users[m]!.name);
    const { value, calls } = tab.act((s) => {
      s.setFocused(true);
      return s.createConversation({ memberNames, ...(title ? { title } : {}) });
    });
    const res = (await calls[0]) as { ok: boolean; conversation?: ConversationDTO } | undefined;
    const error = await value;
    if (res?.ok && res.conversation) ids[op.conv] = res.conversation.id;
    return error ?? `created as #${ids[op.conv]}`;
  };

  const runOp = async (i: number, op: Op): Promise<string> => {
    if (op.kind === "fault") {
      let started: () => void = () => {};
      faultsStarted = new Promise<void>((resolve) => (started = resolve));
      const done = faultChain.then(() => (started(), injectFault(i, op)));
      faultChain = done.catch(() => undefined);
      return done;
    }
    const tab = users[op.user]!.tabs[op.tab]!;
    if (op.kind === "create") {
      // Registered before waiting, so that operations on the new conversation wait for it.
      let created: () => void = () => {};
      creating.set(op.conv, new Promise<void>((resolve) => (created = resolve)));
      try {
        await faultsStarted;
        return await create(tab, op);
      } finally {
        created();
      }
    }
    await faultsStarted;
    switch (op.kind) {
      case "send": {
        const id = await conversationOf(op.conv);
        await showOrSkip(tab, users[op.user]!.id, id);
        report.sends++;
        if (op.mention) report.mentionSends++;
        const { value, calls, unloaded } = tab.act((s) => {
          s.setFocused(true);
          s.openConversation(id);
          return s.sendMessage(id, op.mention ? `op ${i} for ${op.mention}` : `op ${i}`);
        });
        const clientMsgId = tab.lastId;
        const ok = await Promise.race([value, unloaded.then(() => "unloaded" as const)]);
        if (ok === "unloaded") return await handedOver(tab, id, clientMsgId);
        await settle(calls);
        if (ok) return `${clientMsgId} acknowledged`;
        const refusal = tab.store.getState().pending[id]?.find((p) => p.clientMsgId === clientMsgId)?.error;
        // Dropped from the queue: only for a conversation the user left or someone deleted.
        if (refusal === undefined && !journal.mayRemove(users[op.user]!.id, id))
          report.problems.push(
            `${clientMsgId}: dropped from ${tab.name}'s queue although nobody left or deleted #${id}`,
          );
        return `${clientMsgId} not sent: ${refusal ?? "conversation removed"}`;
      }
      case "open": {
        const id = await conversationOf(op.conv);
        await showOrSkip(tab, users[op.user]!.id, id);
        const { calls } = tab.act((s) => {
          s.setFocused(true);
          s.openConversation(id);
        });
        await settle(calls);
        return `read requested up to ${tab.store.getState().readRequested[id] ?? "-"}`;
      }
      case "mute":
      case "mark": {
        // Through the store's actions, as the row menu (or its shortcut) calls them, for any row, whether or not it is
        // the open conversation, and whether or not the menu would offer it (an empty or unread row): another client
        // may send those.
        const id = await conversationOf(op.conv);
        await showOrSkip(tab, users[op.user]!.id, id);
        // The store refuses both at once while the tab is not connected ("try again once the connection is back"),
        // and a person does try again then: without this wait a round's tabs, reconnecting often, had most of their
        // mutes and marks refused, too few left to race anything. The same when the connection went between the
        // wait and the call, or took the answer with it (a reconnect or reload of the same tab runs beside it): a
        // round acknowledged only 4 mutes once, where others acknowledged 13 to 30.
        let error: string | null = null;
        for (let attempt = 1; attempt <= 3; attempt++) {
          await until(() => tab.store.getState().connected, 30_000);
          const { value, calls } = tab.act((s) => {
            s.setFocused(true);
            return op.kind === "mute" ? s.mute(id, op.muted) : s.markUnread(id);
          });
          error = await value;
          await settle(calls);
          if (error === null || !CONNECTION_REFUSAL.test(error)) break;
        }
        if (error === null) report[op.kind === "mute" ? "mutes" : "marks"]++;
        const shown = tab.store.getState().unreadDetails[id];
        return error ?? `acknowledged, the tab shows muted ${shown?.muted}, marked ${shown?.markVersion ?? 0}`;
      }
      case "unsend": {
        const planned = await conversationOf(op.conv);
        // Their newest message not deleted yet: in the planned conversation, else in any conversation the tab lists.
        const mine = [...journal.messages.values()].filter(
          (m) => m.userId === users[op.user]!.id && !journal.messageDeleted(m.message.id),
        );
        const listed = tab.store.getState().conversations;
        const target = (
          mine.filter((m) => m.message.conversationId === planned).at(-1) ??
          mine.filter((m) => listed[m.message.conversationId] !== undefined).at(-1)
        )?.message;
        if (!target) return "nothing of theirs to delete";
        const id = target.conversationId;
        await showOrSkip(tab, users[op.user]!.id, id);
        journal.messageDeleteIssued(id);
        // Refused at once while offline, and tried again once connected, as a mute is (above).
        let error: string | null = null;
        for (let attempt = 1; attempt <= 3; attempt++) {
          await until(() => tab.store.getState().connected, 30_000);
          const { value, calls } = tab.act((s) => {
            s.setFocused(true);
            return s.deleteMessage(target.id);
          });
          error = await value;
          await settle(calls);
          if (error === null || !CONNECTION_REFUSAL.test(error)) break;
        }
        if (error === null) {
          report.unsends++;
          journal.messageDeleteAcknowledged(target);
        }
        return error ?? `${target.clientMsgId} deleted`;
      }
      case "blur":
        tab.act((s) => s.setFocused(false));
        return "done";
      case "reconnect":
      case "reload": {
        report.reconnects++;
        if (op.kind === "reload") await tab.reload(instanceUrl(op.instance));
        else tab.switchTo(instanceUrl(op.instance));
        return (await until(() => tab.connected, 10_000)) ? "connected" : "not connected after 10 s";
      }
      case "add": {
        const id = await conversationOf(op.conv);
        await showOrSkip(tab, users[op.user]!.id, id);
        const other = users[op.other]!;
        journal.addIssued(other.id, id);
        const { value } = tab.act((s) => {
          s.setFocused(true);
          s.openConversation(id);
          return s.addMembers(id, [other.name]);
        });
        const error = await value;
        if (error === null) {
          report.adds++;
          journal.addAcknowledged(other.id, id);
        }
        return error ?? "acknowledged";
      }
      case "remove": {
        const id = await conversationOf(op.conv);
        await showOrSkip(tab, users[op.user]!.id, id);
        const other = users[op.other]!;
        journal.removeIssued(other.id, id);
        const { value } = tab.act((s) => {
          s.setFocused(true);
          s.openConversation(id);
          return s.removeMember(id, other.id);
        });
        const error = await value;
        if (error === null) {
          report.removals++;
          journal.removeAcknowledged(other.id, id);
        }
        return error ?? "acknowledged";
      }
      case "leave":
      case "delete": {
        const id = await conversationOf(op.conv);
        await showOrSkip(tab, users[op.user]!.id, id);
        const { value } = tab.act((s) => {
          s.setFocused(true);
          s.openConversation(id);
          return op.kind === "leave" ? s.leaveConversation(id) : s.deleteConversation(id);
        });
        const error = await value;
        if (error === null) report[op.kind === "leave" ? "leaves" : "deletes"]++;
        return error ?? "acknowledged";
      }
    }
  };

  let next = 0;
  const worker = async () => {
    while (next < plan.ops.length) {
      const i = next++;
      const op = plan.ops[i]!;
      try {
        outcomes[i] = RUNNING;
        outcomes[i] = await runOp(i, op);
      } catch (err) {
        outcomes[i] = err instanceof Skip ? `skipped: ${err.message}` : `error: ${String(err)}`;
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
  await faultChain;
  log("traffic done");

  // Quiescence. Every tab closes its conversation, loses focus and goes offline, so no client can sync (and so
  // rebuild or repair anything) before Redis is read.
  for (const tab of tabs) {
    tab.act((s) => {
      s.closeConversation();
      s.setFocused(false);
    });
    tab.goOffline();
  }
  // Every instance restarts (the crashing one just stops): nothing a client sent can still be running, and the
  // relay replays the outbox at start.
  await Promise.all([...env.instances, ...(env.crasher ? [env.crasher] : [])].map((i) => i.stop()));
  await Promise.all(env.instances.map((i) => i.restart()));
  await env.routable();
  if (!(await until(async () => (await env.db.outboxEvent.count()) === 0, 30_000)))
    report.problems.push(`${await env.db.outboxEvent.count()} outbox entries still pending after 30 s`);
  log("quiesced");

  await checkDatabase(env.db, journal, report);
  const truths = await truthOf(env.db, env.redis);
  await checkRedis(env.redis, truths, journal, report);
  log("database and Redis checked");

  // The clients come back: each tab reconnects, syncs and must show the truth.
  for (const tab of tabs) tab.switchTo(tab.url);
  if (!(await until(() => tabs.every((t) => t.settled), 30_000)))
    report.problems.push(
      `tabs not settled 30 s after reconnecting: ${tabs.filter((t) => !t.settled).map((t) => t.name)}`,
    );
  report.pages = tabs.reduce((sum, tab) => sum + tab.pages, 0);
  // Each tab scrolls its list to the end, so a conversation missing from it shows.
  const scrollAll = async (when: string) => {
    for (const tab of tabs)
      if (!(await tab.showAll())) report.problems.push(`${when}, ${tab.name}: could not page its list to the end`);
  };
  await scrollAll("after reconnecting");
  // A tab sends again, once back, the reads that failed while it was cut off (what it saw while the person looked;
  // components/store/unread.ts, landed): the truth the tabs must show is the database's once they settled.
  const reconnectedTruths = await truthOf(env.db, env.redis);
  const drifted = new Set<number>(report.driftedUserIds);
  const compareTabs = (when: string, truths: Map<number, Map<number, Truth>>) => {
    for (const user of users) {
      const truth = truths.get(user.id) ?? new Map<number, Truth>();
      const { totalUnread, totalMentions } = totalsOf(truth);
      for (const tab of user.tabs) {
        const s = tab.store.getState();
        const problems: string[] = [];
        for (const [conv, t] of truth) {
          const shown = {
            unread: s.unreadCounts[conv] ?? 0,
            mentions: s.unreadDetails[conv]?.mentionCount ?? 0,
            muted: s.unreadDetails[conv]?.muted ?? false,
            marked: s.unreadDetails[conv]?.markedUnread ?? false,
          };
          const want = { unread: t.unread, mentions: t.mentions, muted: t.muted, marked: t.marked };
          if (JSON.stringify(shown) !== JSON.stringify(want))
            problems.push(`#${conv}: shows ${JSON.stringify(shown)}, truth ${JSON.stringify(want)}`);
        }
        for (const conv of Object.keys(s.conversations))
          if (!truth.has(Number(conv))) problems.push(`shows #${conv}, not a member`);
        for (const [conv, t] of truth) if (!s.conversations[conv] && !t.hidden) problems.push(`misses #${conv}`);
        for (const [conv, t] of truth) if (s.conversations[conv] && t.hidden) problems.push(`shows #${conv}, hidden`);
        if (s.totalUnread !== totalUnread) problems.push(`total ${s.totalUnread} != ${totalUnread}`);
        if (s.totalMentions !== totalMentions) problems.push(`mentions total ${s.totalMentions} != ${totalMentions}`);
        if (problems.length > 0) {
          drifted.add(user.id);
          report.problems.push(`${when}, ${user.name} tab ${tab.name}: ${problems.slice(0, 4).join("; ")}`);
        }
      }
    }
  };
  compareTabs("after reconnecting", reconnectedTruths);
  log("tabs reconnected and checked");

  // A snapshot shows the truth whatever the pushes did, so a coda checks the pushes: with every instance up and no
  // fault, each user's first tab opens each of their conversations and sends in it. Every tab must then reach its
  // user's (epoch, version) in Redis, which a tab that dropped or missed the last push to it never does, and show
  // the truth again.
  await Promise.all(
    users.map(async (user) => {
      const tab = user.tabs[0]!;
      for (const id of [...(truths.get(user.id)?.keys() ?? [])].sort((a, b) => a - b)) {
        const { value, calls } = tab.act((s) => {
          s.setFocused(true);
          s.openConversation(id);
          return s.sendMessage(id, "coda");
        });
        await value;
        await settle(calls);
      }
      tab.act((s) => {
        s.closeConversation();
        s.setFocused(false);
      });
    }),
  );
  const behind = async () => {
    const metas = await Promise.all(
      users.map((u) => readThroughFailover(() => env.redis.hmget(userKeys(u.id).meta, "epoch", "version"))),
    );
    return users.flatMap((u, i) =>
      u.tabs.flatMap((tab) => {
        const s = tab.store.getState();
        const [epoch, version] = metas[i]!;
        return tab.settled && s.epoch === epoch && String(s.version) === version
          ? []
          : [`${tab.name} at ${s.epoch}/v${s.version}${tab.settled ? "" : " (busy)"}, Redis at ${epoch}/v${version}`];
      }),
    );
  };
  const quiet = async () => (await env.db.outboxEvent.count()) === 0 && (await behind()).length === 0;
  if (!(await until(quiet, 30_000)))
    report.problems.push(`after the coda, tabs behind Redis for 30 s: ${(await behind()).slice(0, 6).join("; ")}`);
  await scrollAll("after the coda");
  compareTabs("after the coda", await truthOf(env.db, env.redis));
  log("coda checked");
  report.driftedUsers = drifted.size;

  report.reads = journal.reads.length;
  report.acknowledgedMessages = journal.messages.size;
  report.clientViolations = journal.violations.length;
  report.problems.push(...journal.violations.slice(0, 10));
  report.plan = [
    `seed ${o.seed}: users ${users.map((u) => `${u.name} (id ${u.id})`).join(", ")}`,
    ...plan.conversations.map((c, k) => `c${k} = #${ids[k]}: ${describeConversation(c, plan.users)}`),
    ...plan.ops.map((op, i) => `${i} ${describe(op, plan.users)} -> ${outcomes[i]}`),
  ];
  return report;
}

class Skip extends Error {}

/** What the store answers a mute or mark that the connection failed (components/store/unread.ts): try again. */
const CONNECTION_REFUSAL = /^(You are offline|The server did not answer);/;

/** One membership's truth, from the database alone, and the values docs/consistency.md's rule derives from it. */
interface Truth extends MembershipRegisters {
  lastSeq: number;
  lastReadSeq: number;
  /** Others' messages above the cursor, or 1 when that is 0 and the conversation is marked. */
  unread: number;
  /** Messages above the cursor that mention the user. */
  mentions: number;
  marked: boolean;
  /** What the badge sums: the mentions of a muted conversation, else its unread. */
  effective: number;
  /** Left out of the user's list: a direct conversation someone else started, still without a message (hiddenFrom). */
  hidden: boolean;
}

/**
 * Per user (every user, members of nothing too): conversation → its truth, from the database alone (the registers
 * and mention seqs of unread.service's `truth`, expiry being off here), derived by the rule itself, not by the Lua:
 * marked = markVersion > cleared and cursor ≤ markAt; unread = lastSeq − cursor − own messages above the cursor, or 1
 * when 0 and marked;
 * mentions = mention seqs above the cursor up to lastSeq; effective = muted ? mentions : unread.
 */
async function truthOf(db: Db, redis: RedisClient): Promise<Map<number, Map<number, Truth>>> {
  const unread = createUnreadService({ db, redis });
  const truths = new Map<number, Map<number, Truth>>();
  const hidden = new Set(
    (await db.membership.findMany({ where: { hidden: true }, select: { userId: true, conversationId: true } })).map(
      (m) => pairKey(m.userId, m.conversationId),
    ),
  );
  for (const user of await db.user.findMany({ select: { id: true } })) {
    const mine = new Map<number, Truth>();
    truths.set(user.id, mine);
    for (const m of await unread.truth(user.id)) {
      const {
        conversationId,
        lastSeq,
        lastReadSeq,
        mentionSeqs,
        ownSeqs,
        deletedSeqs,
        agedSeq: _aged,
        ...registers
      } = m;
      const marked = registers.markVersion > registers.markClearedVersion && lastReadSeq <= registers.markAt;
      const uncounted = [...ownSeqs, ...deletedSeqs].filter((seq) => seq > lastReadSeq && seq <= lastSeq).length;
      const above = Math.max(0, lastSeq - lastReadSeq - uncounted);
      const count = above === 0 && marked ? 1 : above;
      const mentions = mentionSeqs.filter((seq) => seq > lastReadSeq && seq <= lastSeq).length;
      mine.set(conversationId, {
        ...registers,
        lastSeq,
        lastReadSeq,
        unread: count,
        mentions,
        marked,
        effective: registers.muted ? mentions : count,
        hidden: lastSeq === 0 && hidden.has(pairKey(user.id, conversationId)),
      });
    }
  }
  return truths;
}

const totalsOf = (truth: Map<number, Truth>) => ({
  totalUnread: [...truth.values()].reduce((a, t) => a + t.effective, 0),
  totalMentions: [...truth.values()].reduce((a, t) => a + t.mentions, 0),
});

const pairKey = (userId: number, conversationId: number) => `${userId}:${conversationId}`;

/**
 * What the database must show: every acknowledged message exactly once (unless its conversation was deleted), seqs
 * without gaps, no cursor below an acknowledged read, no cursor past what its user read or sent (a count drops
 * only for reads that happened), acknowledged leaves and deletes done, and no acknowledged mute or mark lost: the
 * membership's muteVersion at least the changes the acknowledgements showed, its `muted` the acknowledged value when
 * that mute was the last of the pair asked (and nothing else of the pair was in flight or unanswered), its
 * markVersion at least the one a mark's acknowledgement showed.
 */
async function checkDatabase(db: Db, journal: Journal, report: RoundReport): Promise<void> {
  const conversations = await db.conversation.findMany({
    select: { id: true, lastSeq: true, _count: { select: { messages: true } } },
  });
  const existing = new Set(conversations.map((c) => c.id));
  for (const [clientMsgId, { userId, message }] of journal.messages) {
    if (!existing.has(message.conversationId)) {
      if (!journal.wasDeleted(message.conversationId))
        report.problems.push(`#${message.conversationId} of acknowledged ${clientMsgId} is gone, never deleted`);
      continue;
    }
    const rows = await db.message.findMany({ where: { senderId: userId, clientMsgId }, select: { id: true } });
    if (rows.length !== 1 || rows[0]!.id !== message.id) {
      report.lostMessages++;
      report.problems.push(`acknowledged message ${clientMsgId} found ${rows.length} times`);
    }
  }
  for (const c of conversations)
    if (c._count.messages !== c.lastSeq)
      report.problems.push(`conversation ${c.id}: lastSeq ${c.lastSeq} but ${c._count.messages} messages`);

  const rows = await db.membership.findMany({
    select: {
      userId: true,
      conversationId: true,
      lastReadSeq: true,
      joinedSeq: true,
      muted: true,
      muteVersion: true,
      markVersion: true,
    },
  });
  const memberships = new Map(rows.map((m) => [pairKey(m.userId, m.conversationId), m.lastReadSeq]));
  const registers = new Map(rows.map((m) => [pairKey(m.userId, m.conversationId), m]));
  for (const a of journal.reads) {
    const cursor = memberships.get(pairKey(a.userId, a.conversationId));
    if (cursor === undefined) {
      if (!journal.mayRemove(a.userId, a.conversationId))
        report.problems.push(`user ${a.userId} is no longer in #${a.conversationId}, never left nor deleted`);
    } else if (cursor < a.seq) {
      report.lostReads++;
      report.problems.push(`user ${a.userId} #${a.conversationId}: cursor ${cursor} below acknowledged read ${a.seq}`);
    }
  }
  // A cursor moves over the user's own messages right above what they read, and no further: sending reads nothing.
  const own = new Set(
    (await db.message.findMany({ select: { senderId: true, conversationId: true, seq: true } })).map(
      (m) => `${pairKey(m.senderId, m.conversationId)}:${m.seq}`,
    ),
  );
  for (const [pair, cursor] of memberships) {
    // Someone added to a group starts with the cursor where they joined.
    let bound = Math.max(journal.readAsked.get(pair) ?? 0, registers.get(pair)?.joinedSeq ?? 0);
    while (own.has(`${pair}:${bound + 1}`)) bound++;
    if (cursor > bound)
      report.problems.push(
        `user:conversation ${pair}: cursor ${cursor}, but read only up to ${bound} (with their own messages above it)`,
      );
  }
  const gone = (userId: number, conversationId: number, what: string) => {
    if (!journal.mayRemove(userId, conversationId))
      report.problems.push(`user ${userId} is no longer in #${conversationId} (${what}), never left nor deleted`);
  };
  for (const a of journal.mutes) {
    const m = registers.get(pairKey(a.userId, a.conversationId));
    if (!m) gone(a.userId, a.conversationId, "muted");
    else if (a.acknowledged !== a.muted) {
      report.lostStates++;
      report.problems.push(
        `user ${a.userId} #${a.conversationId}: mute to ${a.muted} acknowledged as ${a.acknowledged}, nothing else in flight`,
      );
    } else if (journal.lastMuteAsked(a.userId, a.conversationId, a.ask) && m.muted !== a.muted) {
      report.lostStates++;
      report.problems.push(`user ${a.userId} #${a.conversationId}: acknowledged mute ${a.muted}, database ${m.muted}`);
    }
  }
  for (const [pair, changes] of journal.muteChanges) {
    const m = registers.get(pair);
    if (m && m.muteVersion < changes) {
      report.lostStates++;
      report.problems.push(`user:conversation ${pair}: muteVersion ${m.muteVersion}, ${changes} changes acknowledged`);
    }
  }
  for (const a of journal.marks) {
    const m = registers.get(pairKey(a.userId, a.conversationId));
    if (!m) gone(a.userId, a.conversationId, "marked");
    else if (m.markVersion < a.markVersion) {
      report.lostStates++;
      report.problems.push(
        `user ${a.userId} #${a.conversationId}: markVersion ${m.markVersion} below acknowledged ${a.markVersion}`,
      );
    }
  }
  // Who a stored message mentions, by the shared rule: a current member who joined before the message (founders,
  // and those added at a lower seq) was one when it was sent, and must be mentioned exactly when its content names
  // them (or says @all in a group). Those who left since may or may not have been mentioned; those added since were
  // not members then, but the rule reads the members as they are now, so they are left out of it.
  const [users, mentions, mentioning] = await Promise.all([
    db.user.findMany({ select: { id: true, name: true } }),
    db.mention.findMany({ select: { userId: true, conversationId: true, seq: true } }),
    db.message.findMany({
      where: { content: { contains: "@" } },
      select: {
        conversationId: true,
        seq: true,
        senderId: true,
        content: true,
        conversation: { select: { kind: true } },
      },
    }),
  ]);
  const names = new Map(users.map((u) => [u.id, u.name]));
  const mentioned = new Set(mentions.map((m) => `${m.conversationId}:${m.seq}:${m.userId}`));
  const members = new Map<number, { id: number; name: string; joinedSeq: number }[]>();
  for (const m of rows)
    members.set(m.conversationId, [
      ...(members.get(m.conversationId) ?? []),
      { id: m.userId, name: names.get(m.userId) ?? "", joinedSeq: m.joinedSeq },
    ]);
  for (const msg of mentioning) {
    const current = (members.get(msg.conversationId) ?? []).filter((m) => m.joinedSeq < msg.seq);
    const kind = msg.conversation.kind === "group" ? "group" : "direct";
    const want = new Set(mentionedUserIds(msg.content, current, msg.senderId, kind));
    for (const m of current)
      if (want.has(m.id) !== mentioned.has(`${msg.conversationId}:${msg.seq}:${m.id}`))
        report.problems.push(
          `#${msg.conversationId} seq ${msg.seq} "${msg.content}": user ${m.id} ${want.has(m.id) ? "not " : ""}stored as mentioned`,
        );
  }
  for (const l of journal.leaves)
    if (memberships.has(pairKey(l.userId, l.conversationId)))
      report.problems.push(`user ${l.userId} left #${l.conversationId} (acknowledged) but is still a member`);
  for (const m of journal.messageDeletes) {
    if (!existing.has(m.conversationId)) continue;
    const row = await db.message.findUnique({ where: { id: m.id }, select: { content: true, deletedAt: true } });
    if (row && (row.deletedAt === null || row.content !== ""))
      report.problems.push(`message ${m.clientMsgId} deleted (acknowledged) but still there`);
  }
  for (const d of journal.deletes)
    if (existing.has(d.conversationId))
      report.problems.push(`#${d.conversationId} deleted (acknowledged) but still there`);
}

/**
 * Every user's Redis state, read in one step by inspect.lua (which only reads with unread expiry off), against the
 * database: per conversation unread, mentions, muted and marked, both totals (meta total = Σ effective, meta
 * mentions = Σ mentions, by the stored values and by the truth) and registers never above the database. Runs
 * before any client has synced, so no snapshot rebuilt or repaired it. Missing state is what a user has after
 * FLUSHALL or a Redis restart until something touches them; anything else must be exactly the truth, and no stored
 * sum may ever have disagreed with its parts: apply.lua keeps such a drift as it finds it, so it either shows here
 * (total ≠ Σ) or a sync's rebuild repaired it and counted it in `repairs`.
 */
async function checkRedis(
  redis: RedisClient,
  truths: Map<number, Map<number, Truth>>,
  journal: Journal,
  report: RoundReport,
): Promise<void> {
  for (const [userId, truth] of truths) {
    const reply = await readThroughFailover(() => redis.tallyInspect(...unreadScriptKeys(userId)));
    if (reply.length === 1) {
      report.usersWithoutState++;
      if (!journal.dataLoss) {
        report.driftedUserIds.push(userId);
        report.problems.push(`user ${userId}: no Redis state, and no fault lost any`);
      }
      continue;
    }
    const [meta, unread, seen, read, gone] = reply.slice(0, 5).map((flat) => hash(flat as (string | number)[]));
    const mcount = hash(reply[8]);
    const state = states(reply[9]);
    const problems: string[] = [];
    for (const [conv, t] of truth) {
      const { muteVersion, muted, markVersion, cleared, marked } = state.get(String(conv)) ?? NO_STATE;
      const stored = {
        unread: unread!.get(String(conv)) ?? 0,
        mentions: mcount.get(String(conv)) ?? 0,
        muted: muted === 1,
        marked: marked === 1,
      };
      const want = { unread: t.unread, mentions: t.mentions, muted: t.muted, marked: t.marked };
      if (JSON.stringify(stored) !== JSON.stringify(want))
        problems.push(`#${conv}: ${JSON.stringify(stored)} != ${JSON.stringify(want)}`);
      const [s, r] = [seen!.get(String(conv)) ?? 0, read!.get(String(conv)) ?? 0];
      if (s > t.lastSeq || r > t.lastReadSeq)
        problems.push(`#${conv}: registers (${s}, ${r}) above the database (${t.lastSeq}, ${t.lastReadSeq})`);
      if (muteVersion > t.muteVersion || markVersion > t.markVersion || cleared > t.markClearedVersion)
        problems.push(
          `#${conv}: mute/mark/cleared versions (${muteVersion}, ${markVersion}, ${cleared}) above the database ` +
            `(${t.muteVersion}, ${t.markVersion}, ${t.markClearedVersion})`,
        );
    }
    for (const conv of new Set([...unread!.keys(), ...mcount.keys()]))
      if (!truth.has(Number(conv))) problems.push(`counts #${conv}, not a member`);
    for (const conv of new Set([...seen!.keys(), ...read!.keys(), ...state.keys()]))
      if (!truth.has(Number(conv)) && !gone!.has(conv)) problems.push(`registers for #${conv}, not a member`);
    let sum = 0;
    for (const [conv, n] of unread!) if (state.get(conv)?.muted !== 1) sum += n;
    for (const [conv, n] of mcount) if (state.get(conv)?.muted === 1) sum += n;
    const sumMentions = [...mcount.values()].reduce((a, b) => a + b, 0);
    const want = totalsOf(truth);
    const total = meta!.get("total") ?? 0;
    const mentions = meta!.get("mentions") ?? 0;
    if (total !== sum || total !== want.totalUnread)
      problems.push(`total ${total}, Σ effective ${sum}, truth ${want.totalUnread}`);
    if (mentions !== sumMentions || mentions !== want.totalMentions)
      problems.push(`mentions total ${mentions}, Σ mentions ${sumMentions}, truth ${want.totalMentions}`);
    const repairs = meta!.get("repairs") ?? 0;
    if (repairs > 0) problems.push(`rebuild.lua repaired a stored sum ${repairs} times`);
    if (problems.length > 0) {
      report.driftedUserIds.push(userId);
      report.problems.push(`redis user ${userId}: ${problems.slice(0, 4).join("; ")}`);
    }
  }
}
