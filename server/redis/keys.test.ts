import { describe, expect, it } from "vitest";
import { addressBucket, counterKeys, limitSubject, rebuildScriptKeys, unreadScriptKeys, userKeys } from "./keys.ts";

const tagOf = (key: string) => key.match(/\{([^}]*)\}/)?.[1];

describe("key builders", () => {
  it("put every key of a user in one hash tag, so each script touches one cluster slot", () => {
    const keys = Object.values(userKeys(42));
    expect(keys).toEqual(["{u:42}:v2:meta", "{u:42}:v2:convs", "{u:42}:v2:gone", "{u:42}:v2:times", "{u:42}:v2:ment"]);
    for (const k of [...keys, ...rebuildScriptKeys(42)]) expect(tagOf(k)).toBe("u:42");
  });

  it("keep a prefix outside the hash tag and pass keys in script order", () => {
    expect(unreadScriptKeys(7, "lab:lua:")).toEqual([
      "lab:lua:{u:7}:v2:meta",
      "lab:lua:{u:7}:v2:convs",
      "lab:lua:{u:7}:v2:gone",
      "lab:lua:{u:7}:v2:times",
      "lab:lua:{u:7}:v2:ment",
    ]);
  });

  it("give rebuild.lua the earlier layout's keys after the unread scripts' keys, to delete them", () => {
    expect(rebuildScriptKeys(7).slice(5)).toEqual(
      ["meta", "unread", "seen", "read", "gone", "times", "aged", "ment", "mcount", "state"].map((k) => `{u:7}:${k}`),
    );
  });

  it("keep the lab's two-step counters in the user's slot, under the run's prefix", () => {
    const k = counterKeys(3, "lab:r1:naive:");
    expect(k).toEqual({
      meta: "lab:r1:naive:{u:3}:meta",
      unread: "lab:r1:naive:{u:3}:unread",
      state: "lab:r1:naive:{u:3}:state",
    });
    for (const key of Object.values(k)) expect(tagOf(key)).toBe("u:3");
  });
});

describe("addressBucket", () => {
  it("counts an IPv6 address by its /64, which one subscriber holds whole", () => {
    expect(addressBucket("2001:db8:1:2:3:4:5:6")).toBe("2001:db8:1:2::/64");
    expect(addressBucket("2001:0db8:0001:0002:ffff::1")).toBe("2001:db8:1:2::/64");
    expect(addressBucket("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(addressBucket("fe80::1%eth0")).toBe("fe80::/64");
  });

  it("counts an IPv4 address by itself, written alike when it comes IPv4-mapped", () => {
    expect(addressBucket("203.0.113.7")).toBe("203.0.113.7");
    expect(addressBucket("::ffff:203.0.113.7")).toBe("203.0.113.7");
  });

  it("keeps anything that is not an address as it is", () => {
    expect(addressBucket("unknown")).toBe("unknown");
  });

  it("gives two addresses of one /64 one limit key, and of two /64s two", () => {
    const key = (address: string) => limitSubject({ name: "Ann", address });
    expect(key("2001:db8::1")).toBe(key("2001:db8::ffff:1"));
    expect(key("2001:db8::1")).not.toBe(key("2001:db8:0:1::1"));
    expect(limitSubject({ address: "2001:db8::1" })).toBe("{a:2001:db8::/64}");
  });
});
