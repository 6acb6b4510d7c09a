import { z } from "zod";
import { hasVisibleText, MAX_GROUP_SIZE, MESSAGE_MAX_LENGTH } from "./limits.ts";

/**
 * Every input Tally accepts from a client, as the zod schema the server validates it with; the contract's input
 * types are inferred from these (z.infer), so the type and the check cannot disagree.
 */

/**
 * Text that is stored exactly as acknowledged: no NUL (PostgreSQL text cannot hold it) and no lone UTF-16
 * surrogate (it would be stored as U+FFFD, not as sent).
 */
const storableText = (field: string) =>
  z
    .string()
    .refine((s) => !s.includes("\u0000"), `${field} cannot contain a NUL character.`)
    .refine((s) => s.isWellFormed(), `${field} contains a broken character (a lone UTF-16 surrogate).`);

/**
 * No input, for commands and routes that take none (`lab:status`, `bots:stop`, `DELETE /api/session`): nothing,
 * `null` or `{}`.
 */
export const noInputSchema = z.custom<null | undefined | Record<string, never>>(
  (input) => input == null || (typeof input === "object" && !Array.isArray(input) && Object.keys(input).length === 0),
  "This command takes no input.",
);

/** An account name: 1–32 of [A-Za-z0-9_-], unique case-insensitively (the database enforces that part). */
const NAME_CHARS = "A-Za-z0-9_-";
export const USER_NAME = new RegExp(`^[${NAME_CHARS}]{1,32}$`);
/** One character of a name. */
const NAME_CHAR = new RegExp(`^[${NAME_CHARS}]$`);
export const userName = z
  .string()
  .trim()
  .regex(USER_NAME, { error: (issue) => nameProblem(String(issue.input)) });

const NAME_RULE = "a–z, A–Z, 0–9, _ or -";

/**
 * Why `name` is not a name, in a sentence that points at the problem: the first character the rule refuses (named
 * by its code when it is invisible or could turn the sentence around), or the length.
 */
function nameProblem(name: string): string {
  if (name.length === 0) return `Type a name: 1–32 characters, ${NAME_RULE}.`;
  const bad = [...name].find((c) => !NAME_CHAR.test(c));
  if (bad !== undefined) {
    const shown =
      bad === " "
        ? "a space"
        : /^[\p{L}\p{N}\p{P}\p{S}]$/u.test(bad)
          ? `'${bad}'`
          : `U+${bad.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
    return `A name cannot have ${shown}: use ${NAME_RULE} (1–32 characters).`;
  }
  return `A name is at most 32 characters; this one has ${[...name].length}.`;
}

/** Someone to talk to, by name: a name that breaks the rules belongs to nobody, and the message says just that. */
const memberName = z
  .string()
  .trim()
  .regex(USER_NAME, { error: (issue) => `No user called '${shortened(String(issue.input))}'.` });

/** What a message quotes of someone's input: no more than a name's length and a little (a name is 1–32). */
function shortened(text: string): string {
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}

/** `GET /api/users?prefix=`: the start of a name, by the same rules as a name. */
export const userLookupQuery = z.strictObject({
  prefix: z.string().trim().regex(USER_NAME, "Type the start of a name (1–32 characters: a–z, A–Z, 0–9, _ or -)."),
});

/**
 * A whole number in [min, max]. The bounds are checked before `.int()`, so that a number past them (1e308, 2^53)
 * is answered with the bound the field has, not with the largest safe integer.
 */
export const wholeNumber = (min: number, max: number) => z.number().min(min).max(max).int();

const id = wholeNumber(1, 2_147_483_647);
const seq = wholeNumber(0, 2_147_483_647);

export const sendInput = z.strictObject({
  conversationId: id,
  clientMsgId: z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, "The message id is 1–64 letters, digits, _ . : or -."),
  content: storableText("The message")
    .trim()
    .min(1, "A message can't be empty.")
    .max(MESSAGE_MAX_LENGTH, `A message can be at most ${MESSAGE_MAX_LENGTH} characters.`)
    .refine(hasVisibleText, "A message can't be empty: it has nothing to see."),
});
export type SendInput = z.infer<typeof sendInput>;

/**
 * `markVersion`: the mark the client shows (UnreadUpdate.markVersion); a read that reaches the last message clears
 * marks up to it, so a read sent before the person saw a newer mark cannot clear that one (docs/consistency.md).
 */
export const readInput = z.strictObject({ conversationId: id, seq, markVersion: seq.optional() });
export type ReadInput = z.infer<typeof readInput>;

/** `message:delete`: the id of one of the caller's own messages (MessageDTO.id). */
export const deleteMessageInput = z.strictObject({ messageId: id });
export type DeleteMessageInput = z.infer<typeof deleteMessageInput>;

export const muteInput = z.strictObject({ conversationId: id, muted: z.boolean() });
export type MuteInput = z.infer<typeof muteInput>;

export const markUnreadInput = z.strictObject({ conversationId: id });
export type MarkUnreadInput = z.infer<typeof markUnreadInput>;

/** The most conversations one page of the list (`sync`'s first, `conversation:list`'s next) may hold. */
export const MAX_LIST_PAGE = 200;
/** The page the web client asks for: a list's first screens, and a screen or two more as it scrolls. */
export const CLIENT_LIST_PAGE = 50;
const pageLimit = wholeNumber(1, MAX_LIST_PAGE);

/** `sync`: with `limit`, the list's first page of that many conversations; without, the whole list. */
export const syncInput = z.strictObject({ limit: pageLimit.optional() });
export type SyncInput = z.infer<typeof syncInput>;

/** A conversation's last activity as a client got it: ISO 8601 in UTC with milliseconds (MessageDTO.createdAt). */
export const ISO_MILLIS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const activityTime = z
  .string()
  .regex(ISO_MILLIS, "A time is ISO 8601 in UTC with milliseconds, as the server sends it.")
  .refine(isRealTime, "Not a real time.");

/**
 * Whether an ISO_MILLIS text names a time as it is written: not one a parser rolls over (February 31st, hour 24) and
 * not year 0, which PostgreSQL's timestamp refuses (so the statement would fail on what the input check passed).
 */
export function isRealTime(iso: string): boolean {
  const time = Date.parse(iso);
  return !Number.isNaN(time) && !iso.startsWith("0000") && new Date(time).toISOString() === iso;
}

/** `conversation:list`: the page after `before` (ListCursor), at most `limit` conversations. */
export const listInput = z.strictObject({
  before: z.strictObject({ at: activityTime, id }),
  limit: pageLimit,
});
export type ListInput = z.infer<typeof listInput>;

export const credentialsInput = z.strictObject({
  name: userName,
  password: storableText("The password")
    .min(8, "A password needs at least 8 characters.")
    .max(128, "A password can be at most 128 characters."),
});
export type Credentials = z.infer<typeof credentialsInput>;

export const createConversationInput = z.strictObject({
  memberNames: z
    .array(memberName)
    .min(1, "Name a person to start a conversation with.")
    .max(MAX_GROUP_SIZE - 1, `A conversation can have at most ${MAX_GROUP_SIZE - 1} other people.`),
  title: storableText("The title")
    .trim()
    .max(64, "A title can be at most 64 characters.")
    .refine(
      (title) => title === "" || hasVisibleText(title),
      "A title needs something to see; leave it empty to name the group after its members.",
    )
    .optional(),
});
export type CreateConversationInput = z.input<typeof createConversationInput>;

/** `POST /api/conversations/:id/members`: people to add to a group. */
export const addMembersInput = z.strictObject({
  memberNames: z
    .array(memberName)
    .min(1, "Name a person to add.")
    .max(MAX_GROUP_SIZE - 1, `A group can have at most ${MAX_GROUP_SIZE} members.`),
});
export type AddMembersInput = z.input<typeof addMembersInput>;

/**
 * A whole number in a URL (a query parameter, a path segment): plain decimal digits only, so `5e0`, `0x10`, ` 3`
 * and `+3` are refused rather than read as a number, and each number has one spelling.
 */
const queryInt = (min: number, max = 2_147_483_647) =>
  z
    .string()
    // Up to 16 digits, so a number too big is told its bound (the next check), not that it has the wrong digits.
    .regex(/^(0|[1-9]\d{0,15})$/, "Expected a whole number in plain digits.")
    .transform(Number)
    .pipe(wholeNumber(min, max));
export const historyQuery = z
  .strictObject({
    before: queryInt(1).optional(),
    after: queryInt(0).optional(),
    limit: queryInt(1, 200).default(50),
  })
  .refine((q) => q.before === undefined || q.after === undefined, "Use either before or after, not both.");
export type HistoryQuery = z.infer<typeof historyQuery>;

/** `GET /api/conversations?limit=<n>`: as `sync {limit}`, the list's first `limit` rows; without, the whole list. */
export const snapshotQuery = z.strictObject({ limit: queryInt(1, MAX_LIST_PAGE).optional() });

/** `GET /api/conversations/list?at=<time>&id=<id>&limit=<n>`: as `conversation:list {before: {at, id}, limit}`. */
export const listQuery = z
  .strictObject({ at: activityTime, id: queryInt(1), limit: queryInt(1, MAX_LIST_PAGE) })
  .transform(({ at, id, limit }): ListInput => ({ before: { at, id }, limit }));

/** `POST /api/blocks`: whom to block, by name (any letter case, as at sign-in). */
export const blockInput = z.strictObject({ name: userName });

/** An id in a path, named in its errors, which have no field to name it by ("The conversation's id"). */
const pathId = (what: string) =>
  z
    .string()
    .regex(/^(0|[1-9]\d{0,15})$/, `${what} is a whole number in plain digits.`)
    .transform(Number)
    .pipe(z.number().min(1, `${what} must be at least 1.`).max(2_147_483_647, `${what} must be at most 2147483647.`));

/** A conversation's id in a path (`DELETE /api/conversations/:id`). */
export const conversationIdParam = pathId("The conversation's id");

/** A user's id in a path (`DELETE /api/blocks/:userId`). */
export const userIdParam = pathId("The user's id");
