/**
 * Web addresses in a message's text, for the message list to make clickable: `http://` and `https://` only (never
 * `javascript:` or anything else a link could run), up to the first space or invisible format character. Punctuation
 * that ends a sentence after an address (`.`, `,`, `!`, a closing bracket without its opening one) is not part of it.
 *
 * An invisible character ends an address so that a link shows where it goes: `https://paypal.com\u202E@moc.live/`
 * would otherwise be shown turned around as "paypal.com/evil.com@" and open moc.live (a right-to-left override is
 * one of the format characters, \p{Cf}, with the other bidi controls, zero-width spaces and joiners).
 */

export interface TextPart {
  text: string;
  /** The address to open, for the parts that are one. */
  href?: string;
}

const ADDRESS = /\bhttps?:\/\/[^\s<>"'`\p{Cf}]+/giu;
const TRAILING = /[.,;:!?*_~'"]+$/;

/** Trims what a sentence put after an address: trailing punctuation, and closing brackets it does not open. */
function trimAddress(raw: string): string {
  let text = raw;
  for (;;) {
    const before = text;
    text = text.replace(TRAILING, "");
    for (const [open, close] of [
      ["(", ")"],
      ["[", "]"],
    ] as const) {
      if (text.endsWith(close) && text.split(open).length < text.split(close).length) text = text.slice(0, -1);
    }
    if (text === before) return text;
  }
}

export function linkParts(text: string): TextPart[] {
  const parts: TextPart[] = [];
  let at = 0;
  for (const match of text.matchAll(ADDRESS)) {
    const address = trimAddress(match[0]);
    let url: URL;
    try {
      url = new URL(address);
    } catch {
      continue;
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") continue;
    if (match.index > at) parts.push({ text: text.slice(at, match.index) });
    parts.push({ text: address, href: url.href });
    at = match.index + address.length;
  }
  if (at < text.length) parts.push({ text: text.slice(at) });
  return parts;
}
