import { describe, expect, it } from "vitest";
import { isRealTime } from "../contracts/inputs.ts";
import { isoOfTimestamp, sqlId, sqlTimestamp } from "./snapshot.service.ts";

// What the conversation list's statements let into their text and make of PostgreSQL's; the list itself is tested
// against a real database in snapshot.int.test.ts.
describe("the conversation list's statements", () => {
  it("writes a page's cursor time as a timestamp literal of digits, and refuses a time PostgreSQL would not take", () => {
    expect(sqlTimestamp("2026-01-02T03:04:05.120Z")).toBe("'2026-01-02 03:04:05.120'::timestamp(3)");
    for (const time of ["2026-01-02T03:04:05.120Z", "0001-01-01T00:00:00.000Z", "2024-02-29T23:59:59.999Z"]) {
      expect(isRealTime(time)).toBe(true);
    }
    // A parser rolls these over (Date.parse takes them), PostgreSQL refuses year 0: neither reaches a statement.
    for (const time of [
      "2026-02-31T00:00:00.000Z",
      "2025-02-29T00:00:00.000Z",
      "2026-01-01T24:00:00.000Z",
      "0000-01-01T00:00:00.000Z",
      "2026-01-02T03:04:05.12Z",
      "2026-01-02 03:04:05.120",
      "2026-01-02T03:04:05.120Z'; --",
    ]) {
      expect(isRealTime(time) && /Z$/.test(time) && time.length === 24).toBe(false);
      expect(() => sqlTimestamp(time)).toThrow(TypeError);
    }
  });

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
