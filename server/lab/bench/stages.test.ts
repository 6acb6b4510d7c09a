import { describe, expect, it } from "vitest";
import { createMetrics, type SendStage } from "../../metrics/metrics.ts";
import {
  bucketBound,
  bucketQuantile,
  groupsBetween,
  mergeStages,
  parseGroups,
  parseStages,
  stagesBetween,
} from "./stages.ts";

/** An instance's metrics, as server/app.ts makes them; what its /metrics would answer. */
function instance() {
  const metrics = createMetrics({
    outbox: async () => ({ pending: 0, parked: 0 }),
    sockets: () => 0,
    sendsWaiting: () => 0,
    rebuildsWaiting: () => 0,
  });
  return {
    registry: metrics.registry,
    observe: (stage: SendStage, seconds: number) => metrics.sendStage(stage, seconds),
    group: (sends: number) => metrics.sendGroup(sends),
  };
}

describe("the send stages from /metrics", () => {
  it("reads prom-client's exposition and tells what a window added, per stage, over two instances", async () => {
    const a = instance();
    const b = instance();
    a.observe("commit", 0.0008);
    const before = mergeStages([parseStages(await a.registry.metrics()), parseStages(await b.registry.metrics())]);
    // The window: 100 commits of 1.5 ms on A and 100 of 3 ms on B; counters of 0.3 ms on B only.
    for (let i = 0; i < 100; i++) {
      a.observe("commit", 0.0015);
      b.observe("commit", 0.003);
      b.observe("counters", 0.0003);
    }
    const after = mergeStages([parseStages(await a.registry.metrics()), parseStages(await b.registry.metrics())]);
    const window = stagesBetween(before, after, ["commit", "counters", "push"]);
    expect(window.map((w) => [w.stage, w.sends, w.meanMs])).toEqual([
      ["commit", 200, 2.25],
      ["counters", 100, 0.3],
    ]);
    const commit = window[0]!;
    // Half the window's commits are in (1, 2] ms and half in (2, 5] ms: the median is the top of the first.
    expect(commit.p50Ms).toBe(2);
    expect(commit.p99Ms).toBeGreaterThan(4.9);
    expect(commit.p99Ms).toBeLessThanOrEqual(5);
  });

  it("reads the group sizes apart from the stages and tells what a window added, over two instances", async () => {
    const a = instance();
    const b = instance();
    a.group(5);
    a.observe("commit", 0.001);
    const read = async () => {
      const texts = [await a.registry.metrics(), await b.registry.metrics()];
      return { stages: mergeStages(texts.map(parseStages)), groups: mergeStages(texts.map(parseGroups)) };
    };
    const before = await read();
    expect([...before.stages.keys()]).toEqual(["commit"]); // each parse takes its own metric only
    expect([...before.groups.keys()]).toEqual([""]);
    // The window: 60 statements of one send on A, 30 of two and 10 of four on B.
    for (let i = 0; i < 60; i++) a.group(1);
    for (let i = 0; i < 30; i++) b.group(2);
    for (let i = 0; i < 10; i++) b.group(4);
    const after = await read();
    expect(groupsBetween(before.groups, after.groups)).toEqual({
      statements: 100,
      sends: 160,
      mean: 1.6,
      p50: 1, // the 50th of 100 is among the 60 in the first bucket (≤ 1)
      p99: 4, // in the bucket (3, 4]
      lastBound: 64,
    });
    expect(groupsBetween(new Map(), new Map())).toBeUndefined();
    expect(bucketBound([[1, 0]], 0.5)).toBeNull();
    expect(
      bucketBound(
        [
          [1, 10],
          [8, 10],
          [Number.POSITIVE_INFINITY, 11],
        ],
        0.99,
      ),
    ).toBe(Number.POSITIVE_INFINITY);
  });

  it("takes only the metric named, and adds up series that share a key", () => {
    const text = [
      "# HELP tally_send_group_size sends",
      'tally_send_group_size_bucket{le="1"} 4',
      'tally_send_group_size_bucket{le="+Inf"} 5',
      "tally_send_group_size_sum 7",
      "tally_send_group_size_count 5",
      'tally_send_group_size_x_bucket{le="1"} 1000',
      "tally_send_group_size_x_sum 1000",
      "tally_send_group_size_x_count 1000",
      'tally_send_stage_seconds_bucket{stage="commit",le="0.001",instance="a"} 2',
      'tally_send_stage_seconds_bucket{stage="commit",le="0.001",instance="b"} 3',
      'tally_send_stage_seconds_count{stage="commit",instance="a"} 2',
      'tally_send_stage_seconds_count{stage="commit",instance="b"} 3',
      'tally_send_stage_seconds_count{instance="c"} 9',
    ].join("\n");
    expect(parseGroups(text)).toEqual(
      new Map([
        [
          "",
          {
            buckets: [
              [1, 4],
              [Number.POSITIVE_INFINITY, 5],
            ],
            sumS: 7,
            count: 5,
          },
        ],
      ]),
    );
    // The series without a stage label is skipped; the two instances' commits are added.
    expect(parseStages(text)).toEqual(new Map([["commit", { buckets: [[0.001, 5]], sumS: 0, count: 5 }]]));
  });

  it("interpolates inside a bucket, answers the last finite bound past it, and null without samples", () => {
    const buckets: [number, number][] = [
      [0.001, 0],
      [0.002, 10],
      [Number.POSITIVE_INFINITY, 12],
    ];
    expect(bucketQuantile(buckets, 0.25)).toBeCloseTo(0.0013, 6);
    expect(bucketQuantile(buckets, 0.99)).toBe(0.002);
    expect(bucketQuantile([[0.001, 0]], 0.5)).toBeNull();
  });
});
