import { sleep } from "../lock.ts";
import { percentile, round } from "../measure.ts";

/**
 * What the load generator drives: Tally through its sockets, or the floor relay. Conversation k (0 ≤ k <
 * `conversations`) has one sender and one recipient; its messages are numbered 1, 2, 3… in the order they were
 * accepted.
 */
export interface LoadTransport {
  readonly conversations: number;
  /** Sends the next message of conversation k; resolves with its number once acknowledged, rejects if refused. */
  send(k: number): Promise<number>;
  /** Sets the one listener told, as soon as it happens, that conversation k's recipient has heard of message n. */
  onArrival(listener: (k: number, n: number) => void): void;
  close(): void;
}

/**
 * "open": sends go out on schedule whether or not earlier ones were answered. "one-in-flight": a conversation's
 * next send waits until its previous message arrived, so a slow system is offered less (see `carried`).
 */
export type LoadMode = "open" | "one-in-flight";
export const LOAD_MODES: readonly LoadMode[] = ["open", "one-in-flight"];

/** One send: when it went out (performance.now()), and its number once acknowledged. */
export interface Sent {
  k: number;
  at: number;
  n?: number;
  failed?: boolean;
}

export interface LoadResult {
  mode: LoadMode;
  offeredPerSec: number;
  seconds: number;
  /** From the first send until every acknowledgement came and the arrivals were drained. */
  elapsedMs: number;
  /** Sends the schedule asked for: offeredPerSec × seconds. */
  offered: number;
  /** Sends that went out (fewer than offered only one-in-flight, when a conversation was still waiting). */
  sent: number;
  acked: number;
  failed: number;
  /** Sends whose arrival the recipient saw. */
  delivered: number;
  /** delivered / offered. */
  carried: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** At least 99% of the offered sends delivered, none refused, p99 under the target. */
  held: boolean;
}

/** How many of `total` sends are due `elapsedMs` into a window offering `perSec`: the first at once. */
export function dueBy(elapsedMs: number, perSec: number, total: number): number {
  return Math.min(total, Math.floor((elapsedMs * perSec) / 1000) + 1);
}

/** A window's sends and arrivals summed up; `arrivedAt(k, n)` is when message n of conversation k arrived. */
export function summarizeLoad(opts: {
  mode: LoadMode;
  offeredPerSec: number;
  seconds: number;
  elapsedMs: number;
  offered: number;
  sends: readonly Sent[];
  arrivedAt: (k: number, n: number) => number | undefined;
  targetP99Ms: number;
}): LoadResult {
  const latencies: number[] = [];
  let acked = 0;
  for (const s of opts.sends) {
    if (s.n === undefined) continue;
    acked++;
    const at = opts.arrivedAt(s.k, s.n);
    if (at !== undefined) latencies.push(at - s.at);
  }
  latencies.sort((x, y) => x - y);
  const failed = opts.sends.length - acked;
  const p99 = percentile(latencies, 99);
  return {
    mode: opts.mode,
    offeredPerSec: opts.offeredPerSec,
    seconds: opts.seconds,
    elapsedMs: Math.round(opts.elapsedMs),
    offered: opts.offered,
    sent: opts.sends.length,
    acked,
    failed,
    delivered: latencies.length,
    carried: opts.offered === 0 ? 0 : round(latencies.length / opts.offered, 3),
    // Two decimals: the floor's p50 is a few tenths of a millisecond, and the targets are ratios to it.
    p50Ms: round(percentile(latencies, 50), 2),
    p99Ms: round(p99, 2),
    maxMs: round(latencies.at(-1) ?? 0, 1),
    held: failed === 0 && latencies.length >= 0.99 * opts.offered && p99 < opts.targetP99Ms,
  };
}

/** Resolves when `promise` does or after `ms`, whichever comes first. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/**
 * Offers a transport messages at a fixed rate, round-robin over its conversations, and records when each one
 * arrived. The same generator drives Tally and the floor, so their rows differ only in what serves them.
 */
export class LoadGenerator {
  private readonly arrived: Map<number, number>[];
  private readonly waiters = new Map<string, () => void>();
  private lastArrival = 0;

  constructor(private readonly transport: LoadTransport) {
    this.arrived = Array.from({ length: transport.conversations }, () => new Map<number, number>());
    transport.onArrival((k, n) => this.mark(k, n));
  }

  /**
   * One window of `seconds` at `perSec`. Afterwards it waits for every acknowledgement, then up to `drainMs` for
   * the arrivals still missing (one-in-flight: up to `drainMs` for each message before its conversation moves on),
   * and after sends that failed, until arrivals stop.
   */
  async run(opts: {
    mode: LoadMode;
    perSec: number;
    seconds: number;
    drainMs: number;
    targetP99Ms: number;
  }): Promise<LoadResult> {
    const conversations = this.transport.conversations;
    const offered = Math.round(opts.perSec * opts.seconds);
    const sends: Sent[] = [];
    const send = (k: number): Promise<Sent> => {
      const s: Sent = { k, at: performance.now() };
      sends.push(s);
      return this.transport.send(k).then(
        (n) => {
          s.n = n;
          return s;
        },
        () => {
          s.failed = true;
          return s;
        },
      );
    };

    const acks: Promise<Sent>[] = [];
    // One-in-flight: each conversation works off its due sends one at a time, until the window closes.
    const backlog = new Array<number>(conversations).fill(0);
    const chains = new Array<Promise<void> | undefined>(conversations);
    let windowOpen = true;
    const chain = async (k: number): Promise<void> => {
      while (windowOpen && backlog[k]! > 0) {
        backlog[k]!--;
        const s = await send(k);
        if (s.n !== undefined) await within(this.arrival(k, s.n), opts.drainMs);
      }
      chains[k] = undefined;
    };

    const started = performance.now();
    for (let issued = 0; issued < offered;) {
      const due = dueBy(performance.now() - started, opts.perSec, offered);
      for (; issued < due; issued++) {
        const k = issued % conversations;
        if (opts.mode === "open") acks.push(send(k));
        else {
          backlog[k]!++;
          chains[k] ??= chain(k);
        }
      }
      await sleep(2);
    }
    await sleep(Math.max(0, started + opts.seconds * 1000 - performance.now()));
    windowOpen = false;
    await Promise.all([...acks, ...chains]);
    const missing = sends.filter((s) => s.n !== undefined && !this.arrived[s.k]!.has(s.n));
    await within(Promise.all(missing.map((s) => this.arrival(s.k, s.n!))), opts.drainMs);
    this.waiters.clear();
    // A send that timed out may still be in the system's queues: let it finish before the next window starts.
    if (sends.some((s) => s.failed)) await this.settle(1_000, 30_000);
    return summarizeLoad({
      mode: opts.mode,
      offeredPerSec: opts.perSec,
      seconds: opts.seconds,
      elapsedMs: performance.now() - started,
      offered,
      sends,
      arrivedAt: (k, n) => this.arrived[k]?.get(n),
      targetP99Ms: opts.targetP99Ms,
    });
  }

  private mark(k: number, n: number): void {
    const seen = this.arrived[k];
    if (!seen || seen.has(n)) return;
    this.lastArrival = performance.now();
    seen.set(n, this.lastArrival);
    const key = `${k}:${n}`;
    this.waiters.get(key)?.();
    this.waiters.delete(key);
  }

  /** Waits until nothing has arrived for `quietMs`, or at most `maxMs`. */
  private async settle(quietMs: number, maxMs: number): Promise<void> {
    const deadline = performance.now() + maxMs;
    while (performance.now() < deadline && performance.now() - this.lastArrival < quietMs) await sleep(quietMs / 4);
  }

  private arrival(k: number, n: number): Promise<void> {
    if (this.arrived[k]?.has(n)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.set(`${k}:${n}`, resolve));
  }
}
