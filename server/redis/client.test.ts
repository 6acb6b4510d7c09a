import { describe, expect, it } from "vitest";
import { describeRedisTarget } from "./client.ts";

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
