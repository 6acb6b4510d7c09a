import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { supervise } from "./child-output.ts";

describe("supervise", () => {
  it("adds one exit listener for any number of children, and stops each on request", async () => {
    const before = process.listenerCount("exit");
    const children = Array.from({ length: 15 }, () => spawn("sleep", ["30"], { stdio: "ignore" }));
    const supervised = children.map((child) =>
      supervise(child, { signal: "SIGTERM", onParentExit: "SIGKILL", timeoutMs: 5000 }),
    );
    expect(process.listenerCount("exit")).toBeLessThanOrEqual(before + 1);
    await Promise.all(supervised.map((s) => s.stop()));
    expect(children.every((c) => c.signalCode === "SIGTERM")).toBe(true);
  });
});
