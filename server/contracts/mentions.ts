/**
 * The mention rule, shared by the server (who is counted as mentioned) and the browser (what is highlighted, what
 * the composer offers). Plain functions without imports, so the client bundle carries no validation code.
 *
 * A mention is `@name` on word boundaries: the `@` opens the content or follows a character that cannot be part of
 * a name (so `bob@example.com` mentions nobody), and the name is the whole run of name characters after it (the
 * characters of an account name, USER_NAME in inputs.ts), 1–32 of them; a longer run is no mention at all. So
 * `@alice-smith` names `alice-smith`, never `alice`, and `@bob.` or `@bob,` names `bob`. Names compare
 * case-insensitively. `@all` and `@here` address every other member of a group and nobody in a direct
 * conversation. Only current members can be mentioned, and the sender never mentions themselves.
 */

/** The characters of an account name (USER_NAME in inputs.ts). */
const NAME_CHAR = /[A-Za-z0-9_-]/;
/** An `@` and the whole run of name characters after it; the boundary before the `@` is checked separately. */
const TOKEN = /@([A-Za-z0-9_-]+)/g;
const NAME_MAX = 32;

/** The words that address everyone in a group: `all` and `here` mean the same in Tally. */
export const EVERYONE_WORDS = ["all", "here"] as const;
export type EveryoneWord = (typeof EVERYONE_WORDS)[number];

export interface MentionToken {
  /** Index of the `@` in the content. */
  start: number;
  /** Index just after the name. */
  end: number;
  /** The name as written (without the `@`). */
  name: string;
}

export function isNameChar(char: string | undefined): boolean {
  return char !== undefined && NAME_CHAR.test(char);
}

export function isEveryoneWord(name: string): name is EveryoneWord {
  return (EVERYONE_WORDS as readonly string[]).includes(name.toLowerCase());
}

/** Every `@name` token of the content on word boundaries, in order, whatever the name (a member or not). */
export function mentionTokens(content: string): MentionToken[] {
  const tokens: MentionToken[] = [];
  for (const match of content.matchAll(TOKEN)) {
    const name = match[1]!;
    const start = match.index;
    if (name.length > NAME_MAX || isNameChar(content[start - 1])) continue;
    tokens.push({ start, end: start + 1 + name.length, name });
  }
  return tokens;
}

/**
 * The names a message's content mentions, lowercased, each once, in the order they first appear; `@all` and
 * `@here` (any case) are not names: they set `all`. Whether a name belongs to a member is for the caller to decide.
 */
export function parseMentions(content: string): { names: string[]; all: boolean } {
  const names = new Set<string>();
  let all = false;
  for (const token of mentionTokens(content)) {
    const name = token.name.toLowerCase();
    if (isEveryoneWord(name)) all = true;
    else names.add(name);
  }
  return { names: [...names], all };
}

/**
 * The ids of the members a message mentions, ascending: every member but the sender for `@all`/`@here` in a
 * group, else the members named (case-insensitively), never the sender.
 */
export function mentionedUserIds(
  content: string,
  members: readonly { id: number; name: string }[],
  senderId: number,
  kind: "direct" | "group",
): number[] {
  const { names, all } = parseMentions(content);
  const named = new Set(names);
  const ids = new Set<number>();
  for (const member of members) {
    if (member.id === senderId) continue;
    if ((all && kind === "group") || named.has(member.name.toLowerCase())) ids.add(member.id);
  }
  return [...ids].sort((a, b) => a - b);
}

export interface MentionSegment {
  text: string;
  /** The member's name as `memberNames` spells it, or "all"/"here"; null for plain text. */
  mention: string | null;
}

/**
 * The content cut into plain text and mentions, in order; the texts joined give the content back. A mention's
 * text includes its `@`. Tokens that name no member (or `@all`/`@here` in a direct conversation) stay plain text.
 */
export function mentionSegments(
  content: string,
  memberNames: readonly string[],
  kind: "direct" | "group",
): MentionSegment[] {
  const canonical = new Map<string, string>();
  for (const name of memberNames) {
    const key = name.toLowerCase();
    if (!canonical.has(key)) canonical.set(key, name);
  }
  const segments: MentionSegment[] = [];
  let plainFrom = 0;
  for (const token of mentionTokens(content)) {
    const key = token.name.toLowerCase();
    const mention = isEveryoneWord(key) ? (kind === "group" ? key : null) : (canonical.get(key) ?? null);
    if (mention === null) continue;
    if (token.start > plainFrom) segments.push({ text: content.slice(plainFrom, token.start), mention: null });
    segments.push({ text: content.slice(token.start, token.end), mention });
    plainFrom = token.end;
  }
  if (plainFrom < content.length) segments.push({ text: content.slice(plainFrom), mention: null });
  return segments;
}
