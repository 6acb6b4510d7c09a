import { describe, expect, it } from "vitest";
import { returnPath } from "./return-path";

const origin = "http://localhost:3000";

describe("the return path after signing in", () => {
  it("accepts a path on this origin, with its query and hash", () => {
    expect(returnPath("/lab", origin)).toBe("/lab");
    expect(returnPath("/lab?x=1#story", origin)).toBe("/lab?x=1#story");
  });

  it("refuses anything that leaves the origin or is no path", () => {
    for (const raw of [
      "//evil.example/lab",
      "/\\evil.example",
      "https://evil.example/",
      "http://localhost:3000/lab",
      "javascript:alert(1)",
      "lab",
      "",
      null,
      "/\t/evil.example",
    ])
      expect(returnPath(raw, origin), String(raw)).toBeNull();
  });

  it("has nothing to return to from the chat itself", () => {
    expect(returnPath("/", origin)).toBeNull();
  });
});
