import { describe, expect, it } from "vitest";
import { counterKeys, rebuildScriptKeys, unreadScriptKeys, userKeys } from "./keys.ts";

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
