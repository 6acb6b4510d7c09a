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

describe("a child in its own process group", () => {
  it("is stopped when its parent ends on a signal the parent does not handle", async () => {
    // A parent as a test runner or script is: it supervises a child in its own group and handles no signal.
    const script = `
      import { spawn } from "node:child_process";
      import { OWN_PROCESS_GROUP, supervise } from "./server/embedded/child-output.ts";
      const child = spawn("sleep", ["30"], { stdio: "ignore", ...OWN_PROCESS_GROUP });
      supervise(child, { signal: "SIGTERM", onParentExit: "SIGKILL", timeoutMs: 5000 });
      console.log(child.pid);
      setInterval(() => {}, 1000);
    `;
    const parent = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const pid = Number(
      await new Promise<string>((resolve) => parent.stdout.once("data", (d: Buffer) => resolve(`${d}`))),
    );
    expect(pid).toBeGreaterThan(0);
    const exited = new Promise<number | null>((resolve) => parent.once("exit", (code) => resolve(code)));
    parent.kill("SIGINT");
    expect(await exited).toBe(130);
    // SIGKILL is delivered before kill(2) returns in the parent's "exit" handler: the child is gone (or a zombie
    // of the gone parent, reaped by init), never still sleeping.
    const state = () => {
      try {
        process.kill(pid, 0);
      } catch {
        return "gone";
      }
      return "alive";
    };
    await expect.poll(state, { timeout: 10_000 }).toBe("gone");
  });
});
