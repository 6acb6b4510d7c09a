/**
 * Group commit: calls that arrive while earlier batches are still in flight wait in a queue and go to the
 * database together, as one batch, when a batch returns (or in the next turn of the event loop while fewer than
 * `maxInFlight` are out). Under light load every call goes out alone, one turn later; under heavy load batches
 * grow by themselves, so the fixed cost of a round trip, a transaction and a WAL flush is shared by many calls
 * exactly when it matters. The same idea as PostgreSQL's own commit_delay, moved into the client, where it also
 * saves the statements.
 *
 * `run` answers every item of its batch, in order, with an outcome of its own: one bad item need not fail the
 * others. With `maxQueued`, a call that finds that many waiting is refused at once with `full()`: while the
 * database stalls, callers hear "busy" and retry later instead of piling up in memory behind it.
 */
export function groupCommit<I, O>(
  run: (items: I[]) => Promise<PromiseSettledResult<O>[]>,
  options: { maxInFlight: number; maxBatch: number; maxQueued?: number; full?: () => unknown },
): GroupCommit<I, O> {
  const { maxInFlight, maxBatch, maxQueued = Infinity } = options;
  if (!(maxInFlight >= 1 && maxBatch >= 1 && maxQueued >= 1)) {
    throw new RangeError("maxInFlight, maxBatch and maxQueued must be at least 1");
  }
  const full = options.full ?? (() => new Error(`group commit: ${maxQueued} calls are waiting already`));
  interface Waiting {
    item: I;
    resolve: (value: O) => void;
    reject: (reason: unknown) => void;
  }
  const queue: Waiting[] = [];
  let inFlight = 0;
  let scheduled = false;

  function schedule(): void {
    if (scheduled || queue.length === 0 || inFlight >= maxInFlight) return;
    scheduled = true;
    // One turn later, so the calls of this turn (one socket read carries many events) share the batch.
    setImmediate(flush);
  }

  function flush(): void {
    scheduled = false;
    while (queue.length > 0 && inFlight < maxInFlight) {
      const batch = queue.splice(0, maxBatch);
      inFlight++;
      run(batch.map((w) => w.item))
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
          inFlight--;
          schedule();
        });
    }
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

/** A group-committed call, and how many calls wait for a batch now (not counting those in flight). */
export type GroupCommit<I, O> = ((item: I) => Promise<O>) & { waiting(): number };
