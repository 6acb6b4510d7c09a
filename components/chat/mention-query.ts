import { EVERYONE_WORDS, isEveryoneWord, isNameChar } from "@/server/contracts/mentions";

/** The longest account name (USER_NAME): a longer run after an `@` can become no mention. */
const NAME_MAX = 32;

/**
 * The `@name` being typed where the caret is: the `@` at `start` (on a word boundary, as the mention rule wants),
 * `prefix` the name characters between it and the caret, `end` the end of the whole name run (the caret may sit
 * inside a name). Null when the caret is not in such a token.
 */
export interface MentionQuery {
  start: number;
  end: number;
  prefix: string;
}

export function mentionQueryAt(text: string, caret: number): MentionQuery | null {
  if (caret < 0 || caret > text.length) return null;
  let nameStart = caret;
  while (nameStart > 0 && isNameChar(text[nameStart - 1])) nameStart--;
  const at = nameStart - 1;
  if (text[at] !== "@" || isNameChar(text[at - 1])) return null;
  let end = caret;
  while (isNameChar(text[end])) end++;
  if (end - nameStart > NAME_MAX) return null;
  return { start: at, end, prefix: text.slice(nameStart, caret) };
}

export interface MentionOption {
  name: string;
  /** `all` or `here`: every other member of the group. */
  everyone: boolean;
}

/**
 * What the composer offers for `prefix`: the conversation's other members whose names start with it
 * (case-insensitively), by name, then `all` and `here` in a group. A member named like `all` is left out: the rule
 * reads `@all` as everyone, never as that member.
 */
export function mentionOptions(
  prefix: string,
  members: readonly { id: number; name: string }[],
  selfId: number | undefined,
  kind: "direct" | "group",
): MentionOption[] {
  const start = prefix.toLowerCase();
  const matches = (name: string) => name.toLowerCase().startsWith(start);
  const people = members
    .filter((m) => m.id !== selfId && !isEveryoneWord(m.name) && matches(m.name))
    .map((m) => m.name)
    .sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()) || a.localeCompare(b))
    .map((name): MentionOption => ({ name, everyone: false }));
  const everyone = kind === "group" ? EVERYONE_WORDS.filter(matches).map((name) => ({ name, everyone: true })) : [];
  return [...people, ...everyone];
}

/**
 * The text with `@name ` in place of the token being typed, and where the caret goes: after the space. A space
 * already following the token is reused rather than doubled.
 */
export function applyMention(text: string, query: MentionQuery, name: string): { text: string; caret: number } {
  const before = `${text.slice(0, query.start)}@${name}`;
  const after = text.slice(query.end);
  return { text: `${before}${after.startsWith(" ") ? "" : " "}${after}`, caret: before.length + 1 };
}
