import { describe, expect, it } from "vitest";
import { isoOfTimestamp, sqlId } from "./snapshot.service.ts";

// What the conversation list's statements let into their text and make of PostgreSQL's; the list itself is tested
// against a real database in snapshot.int.test.ts.
describe("the conversation list's statements", () => {
  it("writes only safe integers into the list's statements, and refuses anything else", () => {
    for (const id of [0, 7, -3, 2_147_483_647, Number.MAX_SAFE_INTEGER]) expect(sqlId(id)).toMatch(/^-?\d+$/);
    expect(sqlId(-0)).toBe("0");
    for (const id of [1.5, Number.NaN, Infinity, 2 ** 53, "1; DROP TABLE x" as unknown as number]) {
      expect(() => sqlId(id)).toThrow(/not an id/);
    }
  });

  it("writes a stored time as the ISO text a Date would, and refuses a text it does not expect", () => {
    for (const [text, iso] of [
      ["2026-01-02 03:04:05", "2026-01-02T03:04:05.000Z"],
      ["2026-01-02 03:04:05.1", "2026-01-02T03:04:05.100Z"],
      ["2026-01-02 03:04:05.12", "2026-01-02T03:04:05.120Z"],
      ["2026-01-02 03:04:05.007", "2026-01-02T03:04:05.007Z"],
      ["1999-12-31 23:59:59.999", "1999-12-31T23:59:59.999Z"],
    ]) {
      expect(isoOfTimestamp(text!)).toBe(iso);
      expect(isoOfTimestamp(text!)).toBe(new Date(`${text!.replace(" ", "T")}Z`).toISOString());
    }
    for (const text of [
      "2026-01-02 03:04:05.1234", // more precision than timestamp(3)
      "2026-01-02 03:04:05+00", // a timestamptz
      "2026-01-02 03:04:05 BC",
      "12026-01-02 03:04:05",
      "01/02/2026 03:04:05", // another DateStyle
      "",
    ]) {
      expect(() => isoOfTimestamp(text)).toThrow(/not a timestamp/);
    }
  });
});
