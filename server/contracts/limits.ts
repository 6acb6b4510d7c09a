/**
 * Limits the client shows before the server enforces them (server/contracts/inputs.ts). Plain constants, so the
 * browser can import them without the validation code.
 */

/** The longest message, in characters (Unicode code points: an emoji is one) after trimming: what zod's `.max()` counts. */
export const MESSAGE_MAX_LENGTH = 4000;

/** The most members a group can have, its creator included: at its start, and as people are added later. */
export const MAX_GROUP_SIZE = 51;

/** A message's length as MESSAGE_MAX_LENGTH counts it: code points of the trimmed text (not JS's UTF-16 `length`). */
export function messageLength(text: string): number {
  let n = 0;
  for (const _ of text.trim()) n++;
  return n;
}

/**
 * Whether text shows anything: not only whitespace, control characters, format characters (zero-width spaces and
 * joiners, bidi controls, the byte order mark, soft hyphens), the Hangul fillers, the braille blank and marks that
 * only modify a neighbour (variation selectors, the grapheme joiner, Mongolian and Khmer ones). A message of those
 * alone reads as an empty bubble that still counts as unread. The few format and space characters that are drawn
 * (the Arabic number signs and end of ayah, the Syriac abbreviation mark) count as visible.
 */
export function hasVisibleText(text: string): boolean {
  return (
    /[\u0600-\u0605\u06DD\u070F\u08E2]/u.test(text) ||
    !/^(?:[\s\p{Cc}\p{Cf}\u115F\u1160\u3164\uFFA0\u2800]|[\uFE00-\uFE0F]|\u034F|[\u180B-\u180D]|[\u17B4\u17B5])*$/u.test(
      text,
    )
  );
}
