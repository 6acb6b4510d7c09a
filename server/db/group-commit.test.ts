import { describe, expect, it } from "vitest";
import { groupCommit, type Clock } from "./group-commit.ts";

/** A `run` whose batches the test answers by hand, recording what each batch held. */
function controlledRun() {
  const batches: {
    items: number[];
    answer: (outcomes?: PromiseSettledResult<string>[]) => void;
    fail: (err: unknown) => void;
  }[] = [];
  const run = (items: number[]) =>
    new Promise<PromiseSettledResult<string>[]>((resolve, reject) => {
      batches.push({
        items,
        answer: (outcomes) =>
          resolve(outcomes ?? items.map((i) => ({ status: "fulfilled" as const, value: `stored ${i}` }))),
        fail: reject,
      });
    });
  return { batches, run };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A clock the test moves by hand: timers fire when `advance` passes their time. */
function manualClock(): Clock & { advance(ms: number): void; timers(): number } {
  let now = 0;
  const timers = new Set<{ at: number; callback: () => void }>();
  return {
    now: () => now,
    setTimeout: (callback, ms) => {
      const timer = { at: now + ms, callback };
      timers.add(timer);
      return timer;
    },
    clearTimeout: (handle) => void timers.delete(handle as { at: number; callback: () => void }),
    advance(ms) {
      now += ms;
      for (const timer of [...timers].sort((a, b) => a.at - b.at)) {
        if (timer.at > now) break;
        if (!timers.delete(timer)) continue; // cleared by an earlier callback
        timer.callback();
      }
    },
    timers: () => timers.size,
  };
}

describe("groupCommit", () => {
  it("sends the calls of one turn as one batch", async () => {
    const { batches, run } = controlledRun();
    const store = groupCommit(run, { maxInFlight: 2, maxBatch: 10 });
    const answers = [store(1), store(2), store(3)];
    await turn();
    expect(batches.map((b) => b.items)).toEqual([[1, 2, 3]]);
    batches[0]!.answer();
    await expect(Promise.all(answers)).resolves.toEqual(["stored 1", "stored 2", "stored 3"]);
  });

  it("queues calls while maxInFlight batches are out and sends them together when one returns", async () => {
    const { batches, run } = controlledRun();
    const store = groupCommit(run, { maxInFlight: 1, maxBatch: 10 });
    const first = store(1);
    await turn();
    const later = [store(2), store(3)];
    await turn();
    const last = store(4);
    await turn();
    expect(batches.map((b) => b.items)).toEqual([[1]]); // 2, 3 and 4 wait for the batch in flight
    batches[0]!.answer();
    await expect(first).resolves.toBe("stored 1");
    await turn();
    expect(batches.map((b) => b.items)).toEqual([[1], [2, 3, 4]]);
    batches[1]!.answer();
    await expect(Promise.all([...later, last])).resolves.toEqual(["stored 2", "stored 3", "stored 4"]);
  });

  it("refuses a call at once while maxQueued calls wait, and takes calls again once the queue drains", async () => {
    const { batches, run } = controlledRun();
    const busy = new Error("busy");
    const store = groupCommit(run, { maxInFlight: 1, maxBatch: 10, maxQueued: 2, full: () => busy });
    const first = store(1);
    await turn();
    expect(store.waiting()).toBe(0); // 1 is in flight
    const waiting = [store(2), store(3)];
    expect(store.waiting()).toBe(2);
    await expect(store(4)).rejects.toBe(busy);
    expect(store.waiting()).toBe(2);
    batches[0]!.answer();
    await expect(first).resolves.toBe("stored 1");
    await turn();
    expect(batches.map((b) => b.items)).toEqual([[1], [2, 3]]); // the refused call never reached the database
    const after = store(5); // 2 and 3 are out of the queue, in flight
    batches[1]!.answer();
    await expect(Promise.all(waiting)).resolves.toEqual(["stored 2", "stored 3"]);
    await turn();
    batches[2]!.answer();
    await expect(after).resolves.toBe("stored 5");
  });

  it("splits a queue longer than maxBatch, up to maxInFlight batches at once", async () => {
    const { batches, run } = controlledRun();
    const store = groupCommit(run, { maxInFlight: 2, maxBatch: 2 });
    const answers = [1, 2, 3, 4, 5].map((i) => store(i));
    await turn();
    expect(batches.map((b) => b.items)).toEqual([
      [1, 2],
      [3, 4],
    ]);
    batches[1]!.answer();
    await turn(); // the answer frees a place…
    await turn(); // …and the next turn sends what waits
    expect(batches.map((b) => b.items)).toEqual([[1, 2], [3, 4], [5]]);
    batches[0]!.answer();
    batches[2]!.answer();
    await expect(Promise.all(answers)).resolves.toEqual([1, 2, 3, 4, 5].map((i) => `stored ${i}`));
  });

  it("answers each call with its own outcome, and rejects every call of a batch that failed as a whole", async () => {
    const { batches, run } = controlledRun();
    const store = groupCommit(run, { maxInFlight: 1, maxBatch: 10 });
    const [a, b] = [store(1), store(2)];
    await turn();
    batches[0]!.answer([
      { status: "fulfilled", value: "stored 1" },
      { status: "rejected", reason: new Error("not a member") },
    ]);
    await expect(a).resolves.toBe("stored 1");
    await expect(b).rejects.toThrow("not a member");

    const [c, d] = [store(3), store(4)];
    await turn();
    batches[1]!.fail(new Error("database unreachable"));
    await expect(c).rejects.toThrow("database unreachable");
    await expect(d).rejects.toThrow("database unreachable");

    // A failed batch frees its place: the next call goes out.
    const e = store(5);
    await turn();
    batches[2]!.answer();
    await expect(e).resolves.toBe("stored 5");
  });

  it("rejects a run that answers fewer outcomes than items, for the items left without one", async () => {
    const { batches, run } = controlledRun();
    const store = groupCommit(run, { maxInFlight: 1, maxBatch: 10 });
    const [a, b] = [store(1), store(2)];
    await turn();
    batches[0]!.answer([{ status: "fulfilled", value: "stored 1" }]);
    await expect(a).resolves.toBe("stored 1");
    await expect(b).rejects.toThrow("no outcome for item 1");
  });

  describe("with spillAfterMs", () => {
    /** A group commit that spills after 10 ms on a hand-driven clock, and the items of each batch it sent. */
    function spilling(maxInFlight: number, maxBatch = 10) {
      const { batches, run } = controlledRun();
      const clock = manualClock();
      const store = groupCommit(run, { maxInFlight, maxBatch, spillAfterMs: 10, clock });
      return { batches, clock, store, sent: () => batches.map((b) => b.items) };
    }

    it("holds the calls behind a batch in flight and sends them together when it returns", async () => {
      const { batches, clock, store, sent } = spilling(2);
      const first = store(1);
      await turn();
      clock.advance(5);
      const later = [store(2), store(3)];
      await turn();
      expect(sent()).toEqual([[1]]); // a second lane was free, yet 2 and 3 wait
      batches[0]!.answer();
      await expect(first).resolves.toBe("stored 1");
      await turn();
      expect(sent()).toEqual([[1], [2, 3]]);
      expect(clock.timers()).toBe(0); // the wait for a slow batch was called off
      batches[1]!.answer();
      await expect(Promise.all(later)).resolves.toEqual(["stored 2", "stored 3"]);
    });

    it("sends them beside it once it has been out for spillAfterMs, up to maxInFlight", async () => {
      const { batches, clock, store, sent } = spilling(2);
      const answers = [store(1)];
      await turn();
      clock.advance(4);
      answers.push(store(2));
      clock.advance(5);
      await turn();
      expect(sent()).toEqual([[1]]); // out for 9 ms
      clock.advance(1);
      await turn();
      expect(sent()).toEqual([[1], [2]]); // out for 10 ms: stuck, as far as we know
      answers.push(store(3));
      clock.advance(60);
      await turn();
      expect(sent()).toEqual([[1], [2]]); // both lanes are out: 3 waits, however long
      batches[0]!.answer();
      await turn();
      await turn();
      // One lane is free, and the batch still out has been out for 60 ms: 3 goes at once.
      expect(sent()).toEqual([[1], [2], [3]]);
      batches[1]!.answer();
      batches[2]!.answer();
      await expect(Promise.all(answers)).resolves.toEqual(["stored 1", "stored 2", "stored 3"]);
    });

    it("sends the calls left over past maxBatch beside a batch that stays out", async () => {
      const { batches, clock, store, sent } = spilling(2, 2);
      const answers = [1, 2, 3].map((i) => store(i));
      await turn();
      expect(sent()).toEqual([[1, 2]]);
      clock.advance(10);
      await turn();
      expect(sent()).toEqual([[1, 2], [3]]);
      batches.forEach((b) => b.answer());
      await expect(Promise.all(answers)).resolves.toEqual(["stored 1", "stored 2", "stored 3"]);
    });

    it("times the wait from the batches still out when one returns, whichever it is", async () => {
      for (const returns of ["older", "newer"] as const) {
        const { batches, clock, store, sent } = spilling(3);
        const answers = [store(1)];
        await turn();
        clock.advance(10);
        answers.push(store(2)); // 1 has been out for 10 ms: 2 goes out beside it
        await turn();
        clock.advance(2);
        answers.push(store(3)); // 2 has been out for 2 ms: 3 waits
        await turn();
        expect(batches).toHaveLength(2);
        batches[returns === "older" ? 0 : 1]!.answer();
        await turn();
        await turn();
        if (returns === "older") {
          expect(batches).toHaveLength(2); // 2 is still out, for 2 ms only
          clock.advance(8);
          await turn();
        }
        // Once the newer one returned, the one still out (1) had been out for 12 ms: 3 goes at once.
        expect(sent()).toEqual([[1], [2], [3]]);
        batches.forEach((b) => b.answer());
        await expect(Promise.all(answers)).resolves.toEqual(["stored 1", "stored 2", "stored 3"]);
      }
    });

    it("refuses a wait it could not time", () => {
      const { run } = controlledRun();
      for (const spillAfterMs of [Infinity, -1, Number.NaN]) {
        expect(() => groupCommit(run, { maxInFlight: 2, maxBatch: 10, spillAfterMs })).toThrow(RangeError);
      }
    });
  });

  it("frees the lane of a run that throws instead of rejecting, and rejects its calls", async () => {
    let calls = 0;
    const store = groupCommit<number, string>(
      (items) => {
        calls++;
        if (calls === 1) throw new Error("thrown");
        return Promise.resolve(items.map((i) => ({ status: "fulfilled" as const, value: `stored ${i}` })));
      },
      { maxInFlight: 1, maxBatch: 10 },
    );
    await expect(store(1)).rejects.toThrow("thrown");
    await expect(store(2)).resolves.toBe("stored 2");
  });
});
