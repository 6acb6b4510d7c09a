import { describe, expect, it } from "vitest";
import { parseClusterNodes, slotOwnership, slotsOf } from "./redis-cluster.ts";

// Two views of one cluster, as CLUSTER NODES prints them on two of its nodes.
const onMaster = `c676 127.0.0.1:46377@43821 myself,master - 0 1795739773000 58 connected 512-1023 1280-6740
757f 127.0.0.1:40531@45609 master - 0 1795739774051 60 connected 256-511 1024-1279 6741-10922
246a 127.0.0.1:34299@39701 master - 0 1795739774152 59 connected 0-255 10923-16383
a703 127.0.0.1:34695@38053 slave 757f 0 1795739774051 60 connected`;
const onReplica = `a703 127.0.0.1:34695@38053 myself,slave 757f 0 1795739775000 60 connected
246a 127.0.0.1:34299@39701 master - 0 1795739775966 59 connected 0-255 10923-16383
757f 127.0.0.1:40531@45609 master - 1795739775000 1795739775000 60 connected 256-511 1024-1279 6741-10922
c676 127.0.0.1:46377@43821 master - 0 1795739775966 58 connected 512-1023 1280-6740`;

describe("the local cluster's view of itself", () => {
  it("compares who serves which slots, whatever the flags, timings and order of the lines", () => {
    expect(slotOwnership(onReplica)).toBe(slotOwnership(onMaster));
    // As seen on a replica promoted before it heard of the last slot its master took over (slot 511).
    const promotedEarly = onMaster.replace("256-511", "256-510");
    expect(slotOwnership(promotedEarly)).not.toBe(slotOwnership(onMaster));
  });

  it("lists the slots one node serves, as a given node's view says", () => {
    expect(slotsOf(onMaster, "757f").slice(0, 3)).toEqual([256, 257, 258]);
    expect(slotsOf(onMaster, "757f")).toHaveLength(256 + 256 + 4182);
    expect(slotsOf(onMaster.replace("256-511", "256-510"), "757f")).not.toContain(511);
    expect(slotsOf(onMaster.replace("256-511 ", "256-511 [511->-c676] "), "757f")).toHaveLength(256 + 256 + 4182);
    expect(slotsOf(onMaster, "a703")).toEqual([]);
    expect(slotsOf(onMaster, "none")).toEqual([]);
  });

  it("counts a node's slots and leaves out those being migrated", () => {
    const migrating = onMaster.replace("256-511 ", "256-511 [511->-c676] ");
    const nodes = parseClusterNodes(migrating);
    expect(nodes.find((n) => n.id === "757f")).toMatchObject({
      role: "master",
      slots: 256 + 256 + 4182,
      failed: false,
    });
    expect(nodes.find((n) => n.id === "a703")).toMatchObject({ role: "replica", masterId: "757f", slots: 0 });
  });
});
