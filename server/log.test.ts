import { afterEach, describe, expect, it } from "vitest";
import { pino } from "pino";
import { consoleThroughLogger } from "./log.ts";

const original = { ...console };
afterEach(() => void Object.assign(console, original));

describe("consoleThroughLogger", () => {
  it("turns what a library prints with console into the logger's JSON lines, tagged, without colours", () => {
    const lines: string[] = [];
    const log = pino({ level: "debug", base: null, timestamp: false }, { write: (line: string) => lines.push(line) });
    consoleThroughLogger("next", log);
    // As Next.js prints at every start, and an error it catches while rendering.
    console.log("\u001b[32m✓\u001b[39m Running next.config.js took 35ms");
    console.log(""); // Next's blank lines
    console.warn("%s is deprecated", "an option");
    console.error(new Error("boom"));
    const entries = lines.map((line) => JSON.parse(line) as { level: number; from: string; msg: string });
    expect(entries.map(({ level, from }) => ({ level, from }))).toEqual([
      { level: 30, from: "next" },
      { level: 40, from: "next" },
      { level: 50, from: "next" },
    ]);
    expect(entries[0]!.msg).toBe("✓ Running next.config.js took 35ms");
    expect(entries[1]!.msg).toBe("an option is deprecated");
    // One entry, its stack whole.
    expect(entries[2]!.msg).toMatch(/^Error: boom\n\s+at /);
  });
});
