import { describe, expect, it } from "vitest";
import { unreadScriptKeys, userKeys } from "./keys.ts";

describe("key builders", () => {
  it("put every key of a user in one hash tag, so each script touches one cluster slot", () => {
    const keys = Object.values(userKeys(42));
    expect(keys).toEqual([
      "{u:42}:meta",
      "{u:42}:unread",
      "{u:42}:seen",
      "{u:42}:read",
      "{u:42}:gone",
      "{u:42}:times",
      "{u:42}:aged",
      "{u:42}:ment",
      "{u:42}:mcount",
      "{u:42}:state",
    ]);
    for (const k of keys) expect(k.match(/\{([^}]*)\}/)?.[1]).toBe("u:42");
  });

  it("keep a prefix outside the hash tag and pass keys in script order", () => {
    expect(unreadScriptKeys(7, "lab:lua:")).toEqual([
      "lab:lua:{u:7}:meta",
      "lab:lua:{u:7}:unread",
      "lab:lua:{u:7}:seen",
      "lab:lua:{u:7}:read",
      "lab:lua:{u:7}:gone",
      "lab:lua:{u:7}:times",
      "lab:lua:{u:7}:aged",
      "lab:lua:{u:7}:ment",
      "lab:lua:{u:7}:mcount",
      "lab:lua:{u:7}:state",
    ]);
  });
});
