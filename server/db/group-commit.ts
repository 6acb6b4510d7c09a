/**
 * Group commit: calls that arrive while earlier batches are still in flight wait in a queue and go to the
 * database together, as one batch, when a batch returns (or in the next turn of the event loop while fewer than
 * `maxInFlight` are out, and with `spillAfterMs` only once those out have been out that long: below). Under light load every call goes out alone, one turn later; under heavy load batches
 * grow by themselves, so the fixed cost of a round trip, a transaction and a WAL flush is shared by many calls
 * exactly when it matters. The same idea as PostgreSQL's own commit_delay, moved into the client, where it also
 * saves the statements.
 *
 * `run` answers every item of its batch, in order, with an outcome of its own: one bad item need not fail the
 * others. With `maxQueued`, a call that finds that many waiting is refused at once with `full()`: while the
 * database stalls, callers hear "busy" and retry later instead of piling up in memory behind it.
 *
 * With `spillAfterMs`, a batch in flight makes the calls after it wait for it, and another batch goes out beside it
 * (up to `maxInFlight`) only once every batch in flight has been out that long: a round trip of the usual length
 * gathers the calls behind it into one batch, while one that is stuck (a statement waiting on a row lock) holds them
 * for no longer than that, unless the batch that then goes out beside it is stuck too. Without it, batches go out side by side at once, up to `maxInFlight`.
 */
export function groupCommit<I, O>(
  run: (items: I[]) => Promise<PromiseSettledResult<O>[]>,
  options: {
    maxInFlight: number;
    maxBatch: number;
    maxQueued?: number;
    full?: () => unknown;
    spillAfterMs?: number;
    /** Time for `spillAfterMs` (tests give their own). */
    clock?: Clock;
  },
): GroupCommit<I, O> {
  const { maxInFlight, maxBatch, maxQueued = Infinity, spillAfterMs, clock = realClock } = options;
  if (!(maxInFlight >= 1 && maxBatch >= 1 && maxQueued >= 1)) {
    throw new RangeError("maxInFlight, maxBatch and maxQueued must be at least 1");
  }
  if (spillAfterMs !== undefined && !(spillAfterMs >= 0 && Number.isFinite(spillAfterMs))) {
    // Never spilling is maxInFlight: 1; an endless wait would overflow setTimeout.
    throw new RangeError("spillAfterMs must be a finite number of at least 0");
  }
  const full = options.full ?? (() => new Error(`group commit: ${maxQueued} calls are waiting already`));
  interface Waiting {
    item: I;
    resolve: (value: O) => void;
    reject: (reason: unknown) => void;
  }
  const queue: Waiting[] = [];
  /** When each batch in flight went out, oldest first. */
  const started: number[] = [];
  let scheduled = false;
  let spill: ReturnType<Clock["setTimeout"]> | undefined;

  /** Fewer than `maxInFlight` are out, and the newest has been out for `spillAfterMs` (or there is no rule). */
  function mayGoOut(): boolean {
    if (started.length >= maxInFlight) return false;
    if (started.length === 0 || spillAfterMs === undefined) return true;
    return clock.now() - started.at(-1)! >= spillAfterMs;
  }

  function schedule(): void {
    if (scheduled || queue.length === 0 || started.length >= maxInFlight) return;
    if (!mayGoOut()) {
      // Wait for a batch to return, or for the ones out to have been out for spillAfterMs.
      spill ??= clock.setTimeout(
        () => {
          spill = undefined;
          schedule();
        },
        started.at(-1)! + spillAfterMs! - clock.now(),
      );
      return;
    }
    if (spill !== undefined) {
      clock.clearTimeout(spill);
      spill = undefined;
    }
    scheduled = true;
    // One turn later, so the calls of this turn (one socket read carries many events) share the batch.
    setImmediate(flush);
  }

  function flush(): void {
    scheduled = false;
    while (queue.length > 0 && mayGoOut()) {
      const batch = queue.splice(0, maxBatch);
      const at = clock.now();
      started.push(at);
      // Through a promise, so a run that throws instead of rejecting still frees its lane and answers its calls.
      Promise.resolve(batch.map((w) => w.item))
        .then(run)
        .then(
          (outcomes) =>
            batch.forEach((w, i) => {
              const outcome = outcomes[i];
              if (outcome === undefined) w.reject(new Error(`group commit: no outcome for item ${i}`));
              else if (outcome.status === "fulfilled") w.resolve(outcome.value);
              else w.reject(outcome.reason);
            }),
          (err: unknown) => batch.forEach((w) => w.reject(err)),
        )
        .finally(() => {
          started.splice(started.indexOf(at), 1);
          schedule();
        });
    }
    schedule(); // calls left over (more than maxBatch) wait as any others
  }

  const call = (item: I) =>
    new Promise<O>((resolve, reject) => {
      if (queue.length >= maxQueued) {
        reject(full());
        return;
      }
      queue.push({ item, resolve, reject });
      schedule();
    });
  return Object.assign(call, { waiting: () => queue.length });
}

/** What `spillAfterMs` reads the time from and waits with. */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** A group-committed call, and how many calls wait for a batch now (not counting those in flight). */
export type GroupCommit<I, O> = ((item: I) => Promise<O>) & { waiting(): number };
