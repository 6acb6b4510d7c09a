import type { LabStrategyName } from "../../contracts/lab.ts";
import type { RedisClient } from "../../redis/client.ts";
import type { LabOp, Truth } from "../workload.ts";

/** One user's counters as a strategy stores them. */
export interface UserState {
  total: number;
  /** Conversation → unread, conversations with a count only. */
  counts: Map<number, number>;
  /** Conversations muted: their counts stay in `counts` but not in `total` (the lab sends no mentions). */
  muted: Set<number>;
}

/** Where the workload (or a story) reaches into an operation. */
export interface OpHooks {
  /**
   * Called between the operation's two steps (for WATCH: between its reads and EXEC; for Lua: before its one
   * script call). Faults live here: it may sleep, throw StepFailed, or throw WorkerDied.
   */
  gap(): Promise<void>;
  /** Story mode: called after each Redis step with what was done. */
  trace?(action: string): Promise<void>;
  /** Story mode: the lock strategy found the lock taken and starts waiting. */
  waiting?(): void;
}

/** Counters an operation adds to (per strategy run). */
export interface OpStats {
  retries: number;
  lockWaits: number;
}

export interface StrategyContext {
  /** Every key of this strategy starts with it: `lab:<run>:<strategy>:`. */
  prefix: string;
  /** The generator's truth, the lab's stand-in for the database (the Lua strategy rebuilds from it). */
  truth: Truth;
  lock: { ttlMs: number; watchdog: boolean; maxAttempts: number };
  watch: { maxRetries: number };
}

export interface Strategy {
  name: LabStrategyName;
  /** Creates what must exist before the first operation (the Lua strategy's per-user state). */
  prepare(conn: RedisClient, userIds: number[]): Promise<void>;
  /**
   * Applies one operation on `conn`, a connection (to one server, or a cluster client with its own node
   * connections) no other worker uses at the same time.
   */
  apply(conn: RedisClient, op: LabOp, hooks: OpHooks, stats: OpStats): Promise<void>;
  /**
   * Reads users' counters, each user in one atomic step. With `rebuildMissing` (the runner asks for it once the
   * Redis restart fault has run), a strategy that can rebuild (Lua) first rebuilds a user whose state is missing,
   * as a sync does: otherwise a missing state reads as zeros, so a bug that loses keys stays visible.
   */
  read(conn: RedisClient, userIds: number[], opts?: { rebuildMissing?: boolean }): Promise<UserState[]>;
}

/** The injected "second step fails" fault: the worker lives on (and releases what it holds). */
export class StepFailed extends Error {
  constructor() {
    super("injected fault: the second step failed");
  }
}

/** The injected "worker dies" fault: nothing is released, the worker's connection is dropped. */
export class WorkerDied extends Error {
  constructor() {
    super("injected fault: the worker died between its two steps");
  }
}

/** A bound was reached (lock attempts, WATCH retries): the operation is given up and redelivered. */
export class GaveUp extends Error {}

/**
 * Reads users' raw counters (meta.total, the unread hash, and the state hash where the two-step strategies keep
 * "muted"), each user in one MULTI.
 */
export async function readCounters(
  conn: RedisClient,
  keysOf: (userId: number) => { meta: string; unread: string; state: string },
  userIds: number[],
): Promise<UserState[]> {
  return Promise.all(
    userIds.map(async (userId) => {
      const k = keysOf(userId);
      const replies = (await conn.multi().hget(k.meta, "total").hgetall(k.unread).hgetall(k.state).exec()) ?? [];
      const [totalReply, countsReply, stateReply] = replies;
      for (const reply of replies) if (reply[0]) throw reply[0];
      const state = (stateReply?.[1] ?? {}) as Record<string, string>;
      const muted = Object.keys(state).filter((conv) => state[conv] === MUTED);
      return toState(totalReply?.[1] as string | null, countsReply?.[1] as Record<string, string>, muted);
    }),
  );
}

/** The value the two-step strategies keep in the state hash for a muted conversation. */
export const MUTED = "muted";

/** The sum the badge should equal, from what a strategy stores: every count, except muted conversations'. */
export function shownSum(state: UserState): number {
  let sum = 0;
  for (const [conv, n] of state.counts) if (!state.muted.has(conv)) sum += n;
  return sum;
}

export function toState(
  total: string | number | null | undefined,
  counts: Record<string, string> | string[],
  muted: Iterable<string | number> = [],
): UserState {
  const map = new Map<number, number>();
  const entries = Array.isArray(counts)
    ? Array.from({ length: Math.floor(counts.length / 2) }, (_, i) => [counts[2 * i], counts[2 * i + 1]] as const)
    : Object.entries(counts);
  for (const [conv, value] of entries) {
    const n = Number(value);
    if (n !== 0) map.set(Number(conv), n);
  }
  return { total: Number(total ?? 0), counts: map, muted: new Set([...muted].map(Number)) };
}
