import { randomBytes } from "node:crypto";
import type { Db } from "../db/prisma.ts";
import type { RedisClient } from "../redis/client.ts";
import { DEPARTURE_MEMORY_MS, type MembershipTruth, type UnreadService } from "./unread.service.ts";

export interface ReconcileReport {
  usersChecked: number;
  /** Users with no Redis state: nothing to compare, rebuilt from the database on first touch. */
  usersWithoutState: number;
  drifted: number;
  repaired: number;
  /**
   * Stored sums rebuild.lua found off their parts and recomputed (at a sync, or in an earlier reconciliation), all
   * time, over all users (meta `repairs`).
   */
  scriptRepairs: number;
  /** The first few drifted users, for the report. */
  examples: { userId: number; problems: string[] }[];
  /** Outbox entries the relay parked after failing too often (their counters are repaired here like any drift). */
  parkedOutbox: number;
  /** The first few parked entries with their last error. */
  parkedExamples: { id: number; kind: string; conversationId: number; userId: number; lastError: string | null }[];
  /** Departures older than DEPARTURE_MEMORY_MS deleted: no late event can still come for them. */
  departuresForgotten: number;
}

type Truth = Map<number, MembershipTruth>;

/** A flat (field, value) list of inspect.lua's reply as a map of numbers. */
export function hash(flat: (string | number)[]): Map<string, number> {
  const out = new Map<string, number>();
  for (let i = 0; i + 1 < flat.length; i += 2) out.set(String(flat[i]), Number(flat[i + 1]));
  return out;
}

/** Redis' `state` of a conversation: its registers and the derived `marked` (includes/unread.lua). */
export interface StoredState {
  muteVersion: number;
  muted: number;
  markVersion: number;
  markAt: number;
  cleared: number;
  marked: number;
}

/** inspect.lua's `state` list: conversation -> its mute and mark registers and `marked`. */
export function states(flat: string[]): Map<string, StoredState> {
  const out = new Map<string, StoredState>();
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const [muteVersion = 0, muted = 0, markVersion = 0, markAt = 0, cleared = 0, marked = 0] =
      flat[i + 1]!.split(":").map(Number);
    out.set(flat[i]!, { muteVersion, muted, markVersion, markAt, cleared, marked });
  }
  return out;
}

export const NO_STATE: StoredState = { muteVersion: 0, muted: 0, markVersion: 0, markAt: 0, cleared: 0, marked: 0 };

/** The values the scripts derive from the database's registers (docs/consistency.md, "The registers"). */
function expectedOf(t: MembershipTruth) {
  const floor = Math.max(t.lastReadSeq, t.agedSeq);
  const marked = t.markVersion > t.markClearedVersion && t.lastReadSeq <= t.markAt;
  const own = t.ownSeqs.filter((seq) => seq > floor && seq <= t.lastSeq).length;
  const deleted = t.deletedSeqs.filter((seq) => seq > floor && seq <= t.lastSeq).length;
  const unread = Math.max(0, t.lastSeq - floor - own - deleted) || (marked ? 1 : 0);
  const mentions = t.mentionSeqs.filter((seq) => seq > floor && seq <= t.lastSeq).length;
  return { unread, mentions, muted: t.muted, marked };
}

/**
 * What is wrong with one user's Redis state against the database's truth: every derived value (unread, mentions,
 * muted, marked) per conversation and both sums (total = Σ effective, mentions = Σ mention counts). `replace` is
 * set when Redis holds more than the database (a register above it, a mention the database does not explain, a
 * conversation the user is not in): only replacing fixes that.
 * Redis legitimately lags the database for a moment (commit, then apply), so callers look twice, the second time
 * with the first look's truth as `earlier`: a conversation whose seen register is behind the database's lastSeq but
 * at or past `earlier`'s (its read register equal to the database's cursor) has messages on their way that
 * committed since (a steady sender keeps one in flight at every look), and its values are judged at Redis' seen
 * register. A register still behind `earlier` is drift.
 * With unread expiry, inspecting expires first and the truth is computed for the instant Redis expired at.
 */
async function diagnose(
  unreadService: UnreadService,
  userId: number,
  truth: (nowMs: number) => Promise<Truth>,
  earlier?: Truth,
) {
  const reply = await unreadService.inspect(userId);
  if (reply.length === 1) return { missing: true as const };
  const [metaFlat, unreadFlat, seenFlat, readFlat, goneFlat, agedFlat, nowMs, , mcountFlat, stateFlat] = reply;
  const t = await truth(nowMs); // read after Redis: the database is then at least as new as what Redis showed
  const meta = hash(metaFlat);
  const [unread, seen, read, gone, aged, mcount] = [
    hash(unreadFlat),
    hash(seenFlat),
    hash(readFlat),
    hash(goneFlat),
    hash(agedFlat),
    hash(mcountFlat),
  ];
  const state = states(stateFlat);
  const problems: string[] = [];
  let replace = false;
  for (const conv of new Set([...seen.keys(), ...read.keys(), ...unread.keys(), ...mcount.keys(), ...state.keys()])) {
    if (!t.has(Number(conv)) && !gone.has(conv)) {
      problems.push(`conversation ${conv} is counted but the user is not a member`);
      replace = true;
    }
  }
  for (const [conv, truthOf] of t) {
    const { lastSeq, lastReadSeq, agedSeq } = truthOf;
    const s = seen.get(String(conv)) ?? 0;
    const r = read.get(String(conv)) ?? 0;
    if (s > lastSeq || r > lastReadSeq) {
      problems.push(
        `conversation ${conv}: Redis registers (${s}, ${r}) above the database (${lastSeq}, ${lastReadSeq})`,
      );
      replace = true;
    }
    // The expired mark never moves the database's cursor; it only must not claim more than the database
    // explains (which is nothing when expiry is off, e.g. after UNREAD_TTL_DAYS was turned off again).
    const a = aged.get(String(conv)) ?? 0;
    if (a > Math.max(agedSeq, lastReadSeq)) {
      problems.push(`conversation ${conv}: expired up to ${a}, database says ${agedSeq}`);
      replace = true;
    }
    // Registers merge by version (ties by value) and max: one above the database's cannot be merged away.
    const st = state.get(String(conv)) ?? NO_STATE;
    const muted = truthOf.muted ? 1 : 0;
    if (
      st.muteVersion > truthOf.muteVersion ||
      (st.muteVersion === truthOf.muteVersion && st.muted > muted) ||
      st.markVersion > truthOf.markVersion ||
      (st.markVersion === truthOf.markVersion && st.markAt > truthOf.markAt) ||
      st.cleared > truthOf.markClearedVersion
    ) {
      problems.push(
        `conversation ${conv}: Redis mute/mark registers (${st.muteVersion}:${st.muted}, ${st.markVersion}@${st.markAt}, ` +
          `cleared ${st.cleared}) above the database (${truthOf.muteVersion}:${muted}, ` +
          `${truthOf.markVersion}@${truthOf.markAt}, cleared ${truthOf.markClearedVersion})`,
      );
      replace = true;
    }
    const before = earlier?.get(conv);
    // Only a seen register behind: the lists of mentions and own messages are the database's above its cursor, so
    // judging at a read register behind it would expect too little (a read in flight is the user's own, and rare).
    const inFlight = before !== undefined && s < lastSeq && s >= before.lastSeq && r === lastReadSeq;
    const expected = expectedOf(inFlight ? { ...truthOf, lastSeq: s } : truthOf);
    const actual = unread.get(String(conv)) ?? 0;
    if (actual !== expected.unread)
      problems.push(`conversation ${conv}: unread ${actual}, database says ${expected.unread}`);
    const mentions = mcount.get(String(conv)) ?? 0;
    if (mentions !== expected.mentions) {
      problems.push(`conversation ${conv}: mentions ${mentions}, database says ${expected.mentions}`);
      if (mentions > expected.mentions) replace = true; // the mention set only grows
    }
    if (st.muted !== muted) problems.push(`conversation ${conv}: muted ${st.muted}, database says ${muted}`);
    if (st.marked !== (expected.marked ? 1 : 0))
      problems.push(`conversation ${conv}: marked ${st.marked}, database says ${expected.marked ? 1 : 0}`);
  }
  let sum = 0;
  for (const [conv, n] of unread) if (state.get(conv)?.muted !== 1) sum += n;
  for (const [conv, st] of state) if (st.muted === 1) sum += mcount.get(conv) ?? 0;
  const sumMentions = [...mcount.values()].reduce((x, y) => x + y, 0);
  const total = meta.get("total") ?? 0;
  const totalMentions = meta.get("mentions") ?? 0;
  if (total !== sum) problems.push(`total ${total} but conversations sum to ${sum}`);
  if (totalMentions !== sumMentions) problems.push(`mentions ${totalMentions} but conversations sum to ${sumMentions}`);
  return { missing: false as const, problems, replace, scriptRepairs: meta.get("repairs") ?? 0, truth: t };
}

/**
 * The periodic cross-check: walks every user, compares Redis with the truth computed from the database, repairs
 * differences atomically (rebuild.lua: merge, or replace when Redis holds more than the database) and reports.
 */
export async function reconcile(
  deps: { db: Db; unread: UnreadService; onRepaired?: (userIds: number[]) => void },
  options: {
    batchSize?: number;
    settleMs?: number;
    maxExamples?: number;
    /** What runs between a user's two looks (tests); by default a wait of `settleMs`. */
    settle?: () => Promise<void>;
  } = {},
): Promise<ReconcileReport> {
  const { db, unread, onRepaired } = deps;
  const { batchSize = 200, settleMs = 250, maxExamples = 10 } = options;
  const settle = options.settle ?? (() => new Promise<void>((r) => setTimeout(r, settleMs)));
  const report: ReconcileReport = {
    usersChecked: 0,
    usersWithoutState: 0,
    drifted: 0,
    repaired: 0,
    scriptRepairs: 0,
    examples: [],
    parkedOutbox: await db.outboxEvent.count({ where: { deadAt: { not: null } } }),
    parkedExamples: await db.outboxEvent.findMany({
      where: { deadAt: { not: null } },
      orderBy: { id: "asc" },
      take: maxExamples,
      select: { id: true, kind: true, conversationId: true, userId: true, lastError: true },
    }),
    departuresForgotten: 0,
  };
  // Housekeeping that rides on the periodic pass: rebuilds read only the last day's departures anyway.
  const old = { at: { lt: new Date(Date.now() - DEPARTURE_MEMORY_MS) } };
  report.departuresForgotten = (await db.departure.deleteMany({ where: old })).count;
  const truthOf = async (userId: number, nowMs: number): Promise<Truth> =>
    new Map((await unread.truth(userId, nowMs)).map((t) => [t.conversationId, t]));

  let cursor = 0;
  for (;;) {
    const users = await db.user.findMany({
      where: { id: { gt: cursor } },
      orderBy: { id: "asc" },
      take: batchSize,
      select: { id: true },
    });
    if (users.length === 0) break;
    cursor = users.at(-1)!.id;
    const repairedNow: number[] = [];
    for (const { id: userId } of users) {
      report.usersChecked++;
      let d = await diagnose(unread, userId, (now) => truthOf(userId, now));
      if (d.missing) {
        report.usersWithoutState++;
        continue;
      }
      report.scriptRepairs += d.scriptRepairs;
      if (d.problems.length === 0) continue;
      // An event between its commit and its apply looks like drift for a moment: look again before repairing.
      await settle();
      d = await diagnose(unread, userId, (now) => truthOf(userId, now), d.truth);
      if (d.missing || d.problems.length === 0) continue;
      report.drifted++;
      if (report.examples.length < maxExamples) report.examples.push({ userId, problems: d.problems });
      await unread.rebuild(userId, d.replace ? "replace" : "merge");
      // A replace writes its read over whatever Redis holds, so an event applied between that read and its write
      // would be undone; that event committed before it was applied, so a merge from a read made now puts it back
      // (a merge never lowers a register, so it cannot bring back what the replace took out).
      if (d.replace) await unread.rebuild(userId, "merge");
      // Judged as the second look was: a steady sender's next message may be in flight again.
      const after = await diagnose(unread, userId, (now) => truthOf(userId, now), d.truth);
      if (!after.missing && after.problems.length === 0) {
        report.repaired++;
        repairedNow.push(userId);
      }
    }
    if (repairedNow.length > 0) onRepaired?.(repairedNow);
  }
  return report;
}

/** Compare-and-extend: the turn's lease is renewed only by its holder. */
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

/** The key whose holder runs this interval's periodic pass (any instance's; see periodicReconcile). */
export const RECONCILE_TURN_KEY = "tally:reconcile:turn";

/**
 * Every instance's timer calls `tick` each interval; a tick runs `pass` only if this instance's previous pass has
 * ended and no instance has taken this interval's turn: `SET key NX` with a lease of 90% of the interval, renewed
 * while the pass runs. Passes over every user then come about once an interval whatever the number of instances,
 * not once per instance, and a long pass is joined by no other. (An instance that stalls past its lease may meet
 * another instance's pass: two passes are safe, only costlier.)
 */
export function periodicReconcile(opts: {
  redis: RedisClient;
  intervalMs: number;
  pass: () => Promise<void>;
  key?: string;
}): { tick(): Promise<"ran" | "running" | "taken"> } {
  const { redis, intervalMs, pass, key = RECONCILE_TURN_KEY } = opts;
  const token = randomBytes(9).toString("hex");
  let running = false;
  return {
    async tick() {
      if (running) return "running";
      running = true;
      let renewal: NodeJS.Timeout | undefined;
      try {
        const lease = Math.max(1, Math.floor(intervalMs * 0.9));
        if ((await redis.set(key, token, "PX", lease, "NX")) !== "OK") return "taken";
        // A pass longer than its lease keeps the turn: renewed (while still ours) every third of the lease.
        renewal = setInterval(() => void redis.eval(RENEW, 1, key, token, lease).catch(() => {}), lease / 3);
        renewal.unref();
        await pass();
        return "ran";
      } finally {
        clearInterval(renewal);
        running = false;
      }
    },
  };
}
