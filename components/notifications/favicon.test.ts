import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { faviconHref, faviconLabel, faviconSvg } from "./favicon";

describe("the tab's icon with the app badge", () => {
  it("says the count up to 99, then 99+, and nothing at 0", () => {
    expect([0, -1, Number.NaN, 1, 9, 10, 99, 100, 12345].map(faviconLabel)).toEqual([
      "",
      "",
      "",
      "1",
      "9",
      "10",
      "99",
      "99+",
      "99+",
    ]);
  });

  it("is public/icon.svg's drawing, with the count in a red corner only when there is one", () => {
    const file = readFileSync(new URL("../../public/icon.svg", import.meta.url), "utf8");
    const marks = (svg: string) => svg.replace(/\s*\n\s*/g, "").replace(/<svg[^>]*>|<\/svg>/g, "");
    expect(marks(faviconSvg(0))).toBe(marks(file));
    const three = faviconSvg(3);
    expect(three.startsWith(faviconSvg(0).replace("</svg>", ""))).toBe(true);
    expect(three).toContain(">3</text>");
    expect(three).toContain('fill="#dc2626"');
    expect(faviconSvg(250)).toContain(">99+</text>");
  });

  it("is a data: URL an <img> can load, different for each label", () => {
    const href = faviconHref(7);
    expect(href.startsWith("data:image/svg+xml,")).toBe(true);
    expect(decodeURIComponent(href.slice("data:image/svg+xml,".length))).toBe(faviconSvg(7));
    expect(new Set([0, 1, 2, 99, 100, 101].map(faviconHref)).size).toBe(5);
  });
});
