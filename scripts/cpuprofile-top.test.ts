import { describe, expect, it } from "vitest";
import { mainThreadProfiles, owner, summarize, type Profile } from "./cpuprofile-top.ts";

describe("mainThreadProfiles", () => {
  it("keeps thread 0 of node's default names, and profiles named otherwise", () => {
    expect(
      mainThreadProfiles([
        "CPU.20250101.120000.4242.0.001.cpuprofile",
        "CPU.20250101.120000.4242.1.002.cpuprofile",
        "tally-A.cpuprofile",
        "notes.txt",
      ]),
    ).toEqual(["CPU.20250101.120000.4242.0.001.cpuprofile", "tally-A.cpuprofile"]);
  });
});

describe("owner", () => {
  it("names the package, the project folder or the runtime entry", () => {
    expect(owner("file:///w/node_modules/@socket.io/redis-adapter/dist/index.js", "f")).toBe(
      "@socket.io/redis-adapter",
    );
    expect(owner("file:///w/server/unread/unread.service.ts", "apply")).toBe("server/unread");
    expect(owner("node:internal/streams/writable", "write")).toBe("node:internal");
    expect(owner("", "(garbage collector)")).toBe("((garbage collector))");
  });
});

describe("summarize", () => {
  const frame = (functionName: string, url = "") => ({ functionName, url, lineNumber: 9 });
  // root → emit (socket.io) → encode (server/realtime); root → (idle)
  const profile: Profile = {
    nodes: [
      { id: 1, callFrame: frame("(root)"), children: [2, 4] },
      { id: 2, callFrame: frame("emit", "file:///w/node_modules/socket.io/dist/index.js"), children: [3] },
      { id: 3, callFrame: frame("encode", "file:///w/server/realtime/notifier.ts") },
      { id: 4, callFrame: frame("(idle)") },
    ],
    samples: [2, 3, 3, 4, 4, 4, 4, 4],
    timeDeltas: [1000, 1000, 2000, 10_000, 10_000, 10_000, 10_000, 10_000],
  };

  it("leaves idle time out of the shares and counts the callers of each sample inclusively", () => {
    const lines = summarize([profile]).split("\n");
    expect(lines[0]).toBe("1 profile(s), 54 ms sampled, 4 ms busy (shares below are of the busy time)");
    expect(lines).toContain("   75.0%        3 ms  server/realtime");
    expect(lines).toContain("   25.0%        1 ms  socket.io");
    expect(lines).toContain("  100.0%        4 ms  emit node_modules/socket.io/dist/index.js:10");
    expect(lines.some((l) => l.includes("(idle)"))).toBe(false);
  });
});
