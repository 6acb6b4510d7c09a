import type { Cluster } from "ioredis";
import { describe, expect, it } from "vitest";
import { boundOutageRetries, describeRedisTarget } from "./client.ts";

const clusterDown = new Error("CLUSTERDOWN The cluster is down");
const closed = new Error("Connection is closed.");
const moved = new Error("MOVED 3999 127.0.0.1:7001");

/** A cluster whose own handleError resends every time, on a clock the test moves. */
function fake() {
  let now = 0;
  const resent: string[] = [];
  const cluster = boundOutageRetries(
    { handleError: (error: Error) => resent.push(error.message) } as unknown as Cluster,
    { retryMs: 6400, holdMs: 2000, now: () => now },
  );
  /** One command's retry state, and what became of its last error: resent by ioredis or failed here. */
  const command = () => {
    const ttl = {};
    return (error: Error): string => {
      let failed: Error | undefined;
      const before = resent.length;
      cluster.handleError(error, ttl, { maxRedirections: (err: Error) => (failed = err) });
      if (failed) return `failed: ${failed.message}`;
      return resent.length > before ? "resent" : "dropped";
    };
  };
  return { command, advance: (ms: number) => (now += ms) };
}

describe("boundOutageRetries", () => {
  it("resends a command through an outage for 6.4 s from its first error, however many resends that is", () => {
    const c = fake();
    const cmd = c.command();
    expect(cmd(clusterDown)).toBe("resent");
    c.advance(6399);
    expect(cmd(closed)).toBe("resent");
    c.advance(1);
    expect(cmd(clusterDown)).toMatch(/^failed: .*Last error: .*CLUSTERDOWN The cluster is down$/);
  });

  it("rides out a failover shorter than that: no command runs out, so none fails early", () => {
    const c = fake();
    const first = c.command();
    expect(first(closed)).toBe("resent");
    c.advance(4000);
    const second = c.command();
    expect(second(clusterDown)).toBe("resent");
    c.advance(2000);
    expect(first(clusterDown)).toBe("resent");
    expect(second(clusterDown)).toBe("resent");
  });

  it("fails the commands that meet the outage at once after one has run out, until 2 s pass without one", () => {
    const c = fake();
    const first = c.command();
    expect(first(clusterDown)).toBe("resent");
    expect(c.command()(clusterDown)).toBe("resent"); // none has run out yet
    c.advance(6400);
    expect(first(clusterDown)).toMatch(/^failed: /); // ran out: the outage is confirmed
    c.advance(1500);
    expect(c.command()(closed)).toMatch(/^failed: .*Connection is closed\.$/); // the next call of the request
    c.advance(1999);
    expect(c.command()(clusterDown)).toMatch(/^failed: /); // each such failure holds it 2 s more
    c.advance(2000);
    expect(c.command()(clusterDown)).toBe("resent"); // quiet for 2 s: a new outage gets its 6.4 s again
  });

  it("leaves MOVED, ASK and TRYAGAIN to ioredis, also while failing fast", () => {
    const c = fake();
    const first = c.command();
    first(clusterDown);
    c.advance(6400);
    expect(first(clusterDown)).toMatch(/^failed: /);
    const cmd = c.command();
    expect(cmd(moved)).toBe("resent");
    expect(cmd(new Error("TRYAGAIN Multiple keys request during rehashing of slot"))).toBe("resent");
  });
});

describe("describeRedisTarget", () => {
  it("says where Redis is without its password, for logs and the reconcile command's output", () => {
    expect(describeRedisTarget("redis://default:s3cret@10.0.0.5:6380")).toBe("redis://default:***@10.0.0.5:6380");
    expect(describeRedisTarget("rediss://:s3cret@cache.example:6380/2")).toBe("rediss://:***@cache.example:6380/2");
    expect(describeRedisTarget("redis://127.0.0.1:6379")).toBe("redis://127.0.0.1:6379");
    expect(describeRedisTarget({ clusterNodes: ["10.0.0.1:7000", "10.0.0.2:7000"], tls: {} })).toBe(
      "cluster 10.0.0.1:7000,10.0.0.2:7000 (TLS)",
    );
  });
});
