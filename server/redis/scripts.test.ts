import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { constantsOf, formatRecord, parseRecord, RECORD_FIELDS, scripts } from "./scripts.ts";

describe("conversation records", () => {
  it("name the fields in the order the scripts store them (includes/layout.lua)", () => {
    const lua = readFileSync(new URL("./lua/includes/layout.lua", import.meta.url), "utf8");
    const constants = constantsOf(lua);
    const asLua = (field: string) =>
      field
        .replace(/([A-Z])/g, "_$1")
        .toUpperCase()
        .replace("_VERSION", "_V");
    expect(RECORD_FIELDS.map((f) => constants.get(asLua(f)))).toEqual(RECORD_FIELDS.map((_, i) => i + 1));
    expect(constants.get("FIELDS")).toBe(RECORD_FIELDS.length);
  });

  it("are folded into every script that includes them: no constant name is left", () => {
    expect(scripts.tallyApply.lua).toContain("r[1] = math.max(r[1], seen_in)");
    for (const { lua } of Object.values(scripts)) expect(lua).not.toMatch(/\b(SEEN|MUTE_V|FIELDS|@constants)\b/);
  });

  it("read and write the stored form: trailing zeros left out, every field 0 stored as nothing", () => {
    const r = parseRecord("5:2:3");
    expect(r).toMatchObject({ seen: 5, read: 2, unread: 3, mentions: 0, cleared: 0 });
    expect(formatRecord(r)).toBe("5:2:3");
    expect(formatRecord({ ...r, muted: 1 })).toBe("5:2:3:0:0:0:0:1");
    expect(formatRecord(parseRecord(null))).toBe("");
  });
});
