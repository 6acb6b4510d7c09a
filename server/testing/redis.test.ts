import { describe, expect, it } from "vitest";
import { isFailoverError, readThroughFailover } from "./redis.ts";

const clusterDown = new Error("CLUSTERDOWN The cluster is down");
// What ioredis rejects with once its own 64 retries, 100 ms apart, have run out.
const exhausted = new Error("Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down");

/** A clock that only the retries' sleeps move, and a read answering `replies` in turn (an Error is thrown). */
function fake(replies: (string | Error)[]) {
  let now = 0;
  const sleeps: number[] = [];
  let reads = 0;
  return {
    wait: {
      clock: () => now,
      sleep: async (ms: number) => {
        sleeps.push(ms);
        now += ms;
      },
    },
    read: async () => {
      const reply = replies[Math.min(reads++, replies.length - 1)]!;
      if (reply instanceof Error) throw reply;
      return reply;
    },
    sleeps,
    reads: () => reads,
  };
}

describe("a harness read through a failover", () => {
  it("tries again while the cluster is down or a slot migrates, then answers", async () => {
    const tryAgain = new Error("TRYAGAIN Multiple keys request during rehashing of slot");
    const f = fake([clusterDown, exhausted, tryAgain, new Error("Connection is closed."), "state"]);
    await expect(readThroughFailover(f.read, { ...f.wait, pauseMs: 250 })).resolves.toBe("state");
    expect(f.reads()).toBe(5);
    expect(f.sleeps).toEqual([250, 250, 250, 250]);
  });

  it("gives up once the wait is over, with the cluster's last answer", async () => {
    const f = fake([exhausted]);
    await expect(readThroughFailover(f.read, { ...f.wait, waitMs: 10_000, pauseMs: 250 })).rejects.toBe(exhausted);
    expect(f.reads()).toBe(41);
    expect(f.sleeps.reduce((a, b) => a + b, 0)).toBe(10_000);
  });

  it("throws any other error at once", async () => {
    const scriptError = new Error("ERR user_script:12: attempt to compare nil with number");
    const f = fake([scriptError, "state"]);
    await expect(readThroughFailover(f.read, f.wait)).rejects.toBe(scriptError);
    expect(f.reads()).toBe(1);
    expect(f.sleeps).toEqual([]);
  });

  it("tells a failover's answers from the rest", () => {
    expect(isFailoverError(clusterDown)).toBe(true);
    expect(isFailoverError(exhausted)).toBe(true);
    expect(isFailoverError(new Error("connect ECONNREFUSED 127.0.0.1:7001"))).toBe(true);
    expect(isFailoverError(new Error("MOVED 3999 127.0.0.1:6381"))).toBe(false);
    expect(isFailoverError(new Error("WRONGTYPE Operation against a key holding the wrong kind of value"))).toBe(false);
    expect(isFailoverError("CLUSTERDOWN")).toBe(false);
  });
});
