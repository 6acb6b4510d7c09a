import { describe, expect, it } from "vitest";
import { normalizeNumberText } from "./NumberField";

describe("a lab number field's text", () => {
  it("loses its leading zeros, typed after a 0 or into a cleared field", () => {
    expect(normalizeNumberText("02000")).toBe("2000");
    expect(normalizeNumberText("0002")).toBe("2");
    expect(normalizeNumberText("00")).toBe("0");
    expect(normalizeNumberText("00.5")).toBe("0.5");
    expect(normalizeNumberText("-05")).toBe("-5");
  });

  it("keeps what has no leading zero, a fraction being typed, and an empty field", () => {
    for (const text of ["0", "2000", "0.05", "0.", "1.0", "10", "", "1e3"]) {
      expect(normalizeNumberText(text)).toBe(text);
    }
  });
});
