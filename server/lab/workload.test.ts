import { describe, expect, it } from "vitest";
import { driftOf, percentile, wrongOf } from "./measure.ts";
import { toState } from "./strategies/types.ts";
import { resolveWorkload } from "./params.ts";
import { createWorkload, HOT_USER, Truth, type LabOp } from "./workload.ts";

const drain = (w: ReturnType<typeof createWorkload>) => {
  const ops: LabOp[] = [];
  for (let op = w.next(); op; op = w.next()) ops.push(op);
  return ops;
};

describe("the workload generator", () => {
  it("replays the same operations and faults for the same seed, and others for another", () => {
    const params = resolveWorkload({ operations: 500, faults: { stepFailureRate: 0.3, stepDelayMs: 5 } });
    const a = createWorkload(params);
    const b = createWorkload(params);
    const opsA = drain(a);
    expect(drain(b)).toEqual(opsA);
    expect(opsA.map((op) => a.faultsFor(op, 0))).toEqual(opsA.map((op) => b.faultsFor(op, 0)));
    expect(drain(createWorkload({ ...params, seed: 2 }))).not.toEqual(opsA);
  });

  it("aims the hot-user share at user 1 and mixes sends and reads as asked", () => {
    const ops = drain(
      createWorkload(resolveWorkload({ operations: 20_000, users: 100, hotUserShare: 0.5, sendShare: 0.8 })),
    );
    const hot = ops.filter((op) => op.userId === HOT_USER).length / ops.length;
    const sends = ops.filter((op) => op.kind === "send").length / ops.length;
    expect(hot).toBeGreaterThan(0.48);
    expect(hot).toBeLessThan(0.53);
    expect(sends).toBeGreaterThan(0.78);
    expect(sends).toBeLessThan(0.82);
    expect(new Set(ops.map((op) => op.userId)).size).toBe(100);
  });

  it("numbers messages per conversation and reads up to the newest, so the truth is seen minus read", () => {
    const w = createWorkload(resolveWorkload({ operations: 2000, users: 3, conversationsPerUser: 2 }));
    const last = new Map<string, number>();
    for (const op of drain(w)) {
      const key = `${op.userId}:${op.conversationId}`;
      if (op.kind === "send") {
        expect(op.seq).toBe((last.get(key) ?? 0) + 1);
        last.set(key, op.seq);
      } else {
        expect(op.seq).toBe(last.get(key) ?? 0);
      }
    }
    expect(w.truth.total(1)).toBe(w.truth.unread(1, 1) + w.truth.unread(1, 2));
  });

  it("draws no faults when they are off, and some when they are on", () => {
    const off = createWorkload(resolveWorkload({ operations: 300 }));
    expect(drain(off).some((op) => Object.values(off.faultsFor(op, 0)).some(Boolean))).toBe(false);
    const on = createWorkload(resolveWorkload({ operations: 300, faults: { stepFailureRate: 0.2 } }));
    expect(drain(on).filter((op) => on.faultsFor(op, 0).fail).length).toBeGreaterThan(30);
  });
});

describe("the truth", () => {
  it("gives rebuild tuples and refuses users outside the workload", () => {
    const t = new Truth(2, 2);
    t.send(1, 2);
    t.send(1, 2);
    t.read(1, 2);
    t.send(1, 2);
    expect(t.memberships(1)).toEqual([2, 3, 2, 0, 0, 0, 0, 0]);
    expect(t.unread(1, 2)).toBe(1);
    expect(() => t.send(3, 1)).toThrow(RangeError);
  });
});

describe("measurements", () => {
  it("counts the users whose total is not the sum, and by how much", () => {
    expect(driftOf([toState(3, { 1: "3" }), toState(1, {}), toState(2, { 1: "1", 2: "3" })])).toEqual({
      users: 2,
      amount: 3,
    });
  });

  it("leaves a muted conversation's count out of the sum the total must equal", () => {
    expect(driftOf([toState(1, { 1: "1", 2: "3" }, [2]), toState(4, { 1: "1", 2: "3" }, [2])])).toEqual({
      users: 1,
      amount: 3,
    });
    const truth = new Truth(1, 2);
    truth.send(1, 1);
    truth.send(1, 2);
    truth.mute(1, 2);
    expect(truth.total(1)).toBe(1);
    expect(truth.memberships(1)).toEqual([1, 1, 0, 0, 0, 0, 0, 0, 2, 1, 0, 1, 1, 0, 0, 0]);
    expect(wrongOf([1], [toState(1, { 1: "1", 2: "1" }, [2])], truth)).toEqual({ counts: 0, totals: 0 });
    expect(wrongOf([1], [toState(2, { 1: "1", 2: "1" })], truth)).toEqual({ counts: 0, totals: 1 });
  });

  it("compares counts and totals with the truth", () => {
    const truth = new Truth(1, 2);
    truth.send(1, 1);
    expect(wrongOf([1], [toState(1, { 1: "1" })], truth)).toEqual({ counts: 0, totals: 0 });
    expect(wrongOf([1], [toState(1, { 2: "1" })], truth)).toEqual({ counts: 2, totals: 0 });
  });

  it("takes nearest-rank percentiles", () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect([percentile(values, 50), percentile(values, 99), percentile([], 50)]).toEqual([50, 99, 0]);
  });
});

describe("parameters", () => {
  it("fills defaults and rejects out-of-range values", () => {
    expect(resolveWorkload({}).faults.redisRestart).toBe(false);
    expect(() => resolveWorkload({ workers: 0 })).toThrow();
    expect(() => resolveWorkload({ faults: { stepFailureRate: 2 } })).toThrow();
    expect(() => resolveWorkload({ unknown: 1 } as never)).toThrow();
  });
});
