/**
 * Limits the client shows before the server enforces them (server/contracts/inputs.ts). Plain constants, so the
 * browser can import them without the validation code.
 */

/** The longest message, in UTF-16 code units after trimming: what the server's `.max()` (and JS `length`) counts. */
export const MESSAGE_MAX_LENGTH = 4000;
