import { EventEmitter } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Cluster } from "ioredis";
import { paceSlotRefreshes } from "./client.ts";

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

/** A cluster whose slot refreshes are counted and answered when the test says. */
function fakeCluster() {
  const emitter = new EventEmitter() as EventEmitter & { refreshSlotsCache(cb?: (err?: Error | null) => void): void };
  const answers: ((err?: Error | null) => void)[] = [];
  emitter.refreshSlotsCache = (cb) => void answers.push(cb ?? (() => undefined));
  return { cluster: emitter as unknown as Cluster, answers };
}

describe("paceSlotRefreshes", () => {
  it("refreshes at once, then at most once every interval, answering every caller by the refresh after its call", () => {
    const { cluster, answers } = fakeCluster();
    paceSlotRefreshes(cluster, 500, () => Date.now());
    const heard: string[] = [];
    cluster.refreshSlotsCache(() => heard.push("first"));
    expect(answers).toHaveLength(1);
    // A dead node's subscriber failing over and over: every "-node" asks again at once.
    for (let i = 0; i < 50; i++) cluster.refreshSlotsCache(() => heard.push(`again ${i}`));
    expect(answers).toHaveLength(1);
    answers[0]!();
    expect(heard).toEqual(["first"]);
    vi.advanceTimersByTime(499);
    expect(answers).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(answers).toHaveLength(2);
    answers[1]!(new Error("ClusterAllFailedError"));
    expect(heard).toHaveLength(51);
    // Quiet for longer than the interval: the next one runs at once.
    vi.advanceTimersByTime(5000);
    expect(answers).toHaveLength(2);
    cluster.refreshSlotsCache();
    expect(answers).toHaveLength(3);
  });
});
