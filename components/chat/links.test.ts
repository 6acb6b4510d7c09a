import { describe, expect, it } from "vitest";
import { linkParts } from "./links";

describe("linkParts", () => {
  it("finds http and https addresses, leaving the text around them as it is", () => {
    expect(linkParts("see https://example.com/a?b=1#c and http://localhost:3000/x")).toEqual([
      { text: "see " },
      { text: "https://example.com/a?b=1#c", href: "https://example.com/a?b=1#c" },
      { text: " and " },
      { text: "http://localhost:3000/x", href: "http://localhost:3000/x" },
    ]);
    expect(linkParts("no address here")).toEqual([{ text: "no address here" }]);
    expect(linkParts("")).toEqual([]);
  });

  it("leaves a sentence's punctuation and unopened brackets out of the address", () => {
    expect(linkParts("Look: https://example.com/page.")).toEqual([
      { text: "Look: " },
      { text: "https://example.com/page", href: "https://example.com/page" },
      { text: "." },
    ]);
    expect(linkParts("(see https://en.wikipedia.org/wiki/Tally_(accounting))")).toEqual([
      { text: "(see " },
      {
        text: "https://en.wikipedia.org/wiki/Tally_(accounting)",
        href: "https://en.wikipedia.org/wiki/Tally_(accounting)",
      },
      { text: ")" },
    ]);
    expect(linkParts("https://example.com/?!")).toEqual([
      { text: "https://example.com/", href: "https://example.com/" },
      { text: "?!" },
    ]);
  });

  it("never links anything but http and https, nor an address without a host", () => {
    for (const text of [
      "javascript:alert(1)",
      "data:text/html,hi",
      "ftp://example.com/file",
      "mailto:a@b.c",
      "http://",
      "https://.",
    ]) {
      expect(
        linkParts(text).some((p) => p.href !== undefined),
        text,
      ).toBe(false);
    }
    // A scheme hidden inside a word is not an address either.
    expect(linkParts("xhttps://example.com").some((p) => p.href !== undefined)).toBe(false);
  });

  it("ends an address at an invisible format character, so a link opens where its text says", () => {
    // A right-to-left override would show the rest turned around ("paypal.com/evil.com@") while opening moc.live.
    expect(linkParts("see https://paypal.com\u202E@moc.live/ ok")).toEqual([
      { text: "see " },
      { text: "https://paypal.com", href: "https://paypal.com/" },
      { text: "\u202E@moc.live/ ok" },
    ]);
    for (const invisible of ["\u200B", "\u200F", "\u2066", "\uFEFF", "\u00AD"]) {
      const parts = linkParts(`https://example.com${invisible}.evil.test/`);
      expect(parts[0], JSON.stringify(invisible)).toEqual({
        text: "https://example.com",
        href: "https://example.com/",
      });
    }
  });
});
