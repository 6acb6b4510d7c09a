import type { z } from "zod";
import type { ApiError, ErrorCode } from "./contracts/index.ts";

/**
 * A start refused for its configuration (a bad or missing variable): its message says what to fix, and is all an
 * operator needs to see (no stack trace).
 */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** An error the caller may see: its code is part of the public contract, its message is safe to show. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** With `rate_limited`: when the same call can succeed again. */
    readonly retryAfterMs?: number,
    /** With `invalid` or `conflict`: the input field at fault (ApiError's `field`). */
    readonly field?: string,
  ) {
    super(message);
    this.name = "AppError";
  }
}

/** A refusal about one field of the input (`field`, as the input spells it), so that a form can mark that field. */
export function fieldError(code: "invalid" | "conflict", field: string, message: string): AppError {
  return new AppError(code, message, undefined, field);
}

/**
 * The retry hint of a refusal that ends when something else ends, not with time (a user's sockets at the cap, the
 * server's one lab run): a suggestion of when to look again.
 */
export const RETRY_WHEN_FREED_MS = 5_000;

export const httpStatus: Record<ErrorCode, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  unsupported_media_type: 415,
  rate_limited: 429,
  unavailable: 503,
};

/** Anything else becomes `unavailable` without leaking internals; the caller logs the original. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof AppError) {
    const error: ApiError = { code: err.code, message: err.message };
    if (err.retryAfterMs !== undefined) error.retryAfterMs = err.retryAfterMs;
    if (err.field !== undefined) error.field = err.field;
    return error;
  }
  return { code: "unavailable", message: "The service is temporarily unavailable; try again." };
}

/**
 * What a person calls each field of the contract, for messages about a field whose rule has no sentence of its
 * own (a wrong type, a missing field). Other fields are named as they are spelled, in quotes.
 */
const FIELD_WORDS: Record<string, string> = {
  content: "the message",
  clientMsgId: "the message id",
  conversationId: "the conversation",
  seq: "the read position",
  memberNames: "the list of people",
  title: "the title",
  name: "the name",
  password: "the password",
  prefix: "the name to look for",
  before: "'before'",
  after: "'after'",
  limit: "'limit'",
};

const TYPE_WORDS: Record<string, string> = {
  string: "text",
  number: "a number",
  int: "a whole number",
  boolean: "true or false",
  array: "a list",
  object: "an object",
};

function fieldWords(path: readonly PropertyKey[] | undefined): string {
  const key = [...(path ?? [])].reverse().find((k): k is string => typeof k === "string");
  if (key === undefined) return "the request";
  return FIELD_WORDS[key] ?? `'${key}'`;
}

const capitalized = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * A plain sentence for a validation problem whose rule gave none of its own. Rules that a person can break
 * through the UI carry their own sentence in inputs.ts; this covers the rest (hand-made requests, the lab).
 */
export function plainIssueMessage(issue: z.core.$ZodRawIssue): string {
  const field = fieldWords(issue.path);
  const Field = capitalized(field);
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return `${Field} is missing.`;
      return `${Field} should be ${TYPE_WORDS[issue.expected] ?? issue.expected}.`;
    case "too_small":
      if (issue.origin === "string") return `${Field} needs at least ${String(issue.minimum)} characters.`;
      if (issue.origin === "array") return `${Field} needs at least ${String(issue.minimum)} entries.`;
      if (issue.inclusive === false) return `${Field} must be more than ${String(issue.minimum)}.`;
      return `${Field} must be at least ${String(issue.minimum)}.`;
    case "too_big":
      if (issue.origin === "string") return `${Field} can have at most ${String(issue.maximum)} characters.`;
      if (issue.origin === "array") return `${Field} can have at most ${String(issue.maximum)} entries.`;
      return `${Field} must be at most ${String(issue.maximum)}.`;
    case "unrecognized_keys": {
      // Named, but only a few and each cut short: the answer stays small however many keys were sent.
      const named = issue.keys.slice(0, 3).map((k) => `'${k.length > 40 ? `${k.slice(0, 40)}…` : k}'`);
      if (issue.keys.length > named.length) named.push(`${issue.keys.length - named.length} more`);
      return issue.keys.length === 1
        ? `The request has a field Tally does not know: ${named[0]}.`
        : `The request has fields Tally does not know: ${named.join(", ")}.`;
    }
    case "invalid_value":
      return `${Field} must be one of ${issue.values.map((v) => `'${String(v)}'`).join(", ")}.`;
    case "not_multiple_of":
      return `${Field} must be a multiple of ${String(issue.divisor)}.`;
    case "invalid_format":
      return `${Field} is not in the expected form.`;
    default:
      return `${Field} is not valid.`;
  }
}

/**
 * Parses untrusted input with one of the contract's schemas, or throws `invalid` with a sentence a person can
 * read: the rule's own sentence when it has one (inputs.ts), else one built by `plainIssueMessage`.
 */
export function parse<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  // Without an error map first: zod parsed a send's payload several times faster without one (0.8-2 µs against
  // 3-6, docs/benchmarks.md, "A fifth look"), and every command comes here. Only input that fails parses twice.
  const fast = schema.safeParse(input);
  if (fast.success) return fast.data;
  const result = schema.safeParse(input, { error: plainIssueMessage });
  const issue = result.success ? undefined : result.error.issues[0];
  // The field at fault: the input's own key the first problem is under (a list's entry names its list).
  const field = typeof issue?.path[0] === "string" ? issue.path[0] : undefined;
  throw new AppError("invalid", issue?.message || "The request is not valid.", undefined, field);
}

/** "No user called 'x'." / "No users called 'x', 'y' or 'z'." */
export function noSuchUsers(names: string[]): string {
  const quoted = names.map((n) => `'${n}'`);
  if (quoted.length === 1) return `No user called ${quoted[0]}.`;
  return `No users called ${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}.`;
}

/**
 * A tab that names the user it shows (the handshake's `auth.userId`, HTTP's `X-Tally-User`) while the browser's
 * cookie holds someone else's session: refused, whatever it asked (docs/protocol.md, "Sessions").
 */
export const ANOTHER_ACCOUNT = "This tab shows another account; sign in again.";
