/**
 * Limits the client shows before the server enforces them (server/contracts/inputs.ts). Plain constants, so the
 * browser can import them without the validation code.
 */

/** The longest message, in UTF-16 code units after trimming: what the server's `.max()` (and JS `length`) counts. */
export const MESSAGE_MAX_LENGTH = 4000;

/**
 * Whether text shows anything: not only whitespace, control characters, format characters (zero-width spaces and
 * joiners, bidi controls, the byte order mark, soft hyphens) and the Hangul fillers. A message of those alone reads
 * as an empty bubble that still counts as unread.
 */
export function hasVisibleText(text: string): boolean {
  return !/^[\s\p{Cc}\p{Cf}\u115F\u1160\u3164\uFFA0]*$/u.test(text);
}
