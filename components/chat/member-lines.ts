import type { MemberAdded, MemberLeft, MessageDTO } from "@/server/contracts";

/** A line about the group's members among its messages: "bob left", "carol added dave". */
export type MemberLine = (MemberLeft & { kind: "left" }) | (MemberAdded & { kind: "added" });

/** Where each line goes among the loaded messages. */
export interface LinePlacement<T> {
  /** Lines to show right before the message of that seq. */
  before: Map<number, T[]>;
  /** Lines after the newest loaded message. */
  after: T[];
}

/** The group's "left" and "added" lines as one list (placeLines orders them by time). */
export function memberLines(left: readonly MemberLeft[], added: readonly MemberAdded[]): MemberLine[] {
  return [
    ...left.map((l) => ({ ...l, kind: "left" as const })),
    ...added.map((a) => ({ ...a, kind: "added" as const })),
  ];
}

/**
 * Places lines among `items` (ascending by seq): one with a `seq` (someone added: the group's lastSeq then) right
 * before the first message above it, exactly; one without (someone left) by time, before the first message written
 * after it happened. One older than the oldest loaded message is shown only once nothing older is left to load
 * (`complete`), or it would sit above messages it did not see go by.
 */
export function placeLines<T extends { at: string; seq?: number }>(
  items: readonly MessageDTO[],
  lines: readonly T[],
  complete: boolean,
): LinePlacement<T> {
  const before = new Map<number, T[]>();
  const after: T[] = [];
  const first = items[0];
  for (const line of [...lines].sort((a, b) => a.at.localeCompare(b.at))) {
    const { seq } = line;
    const older = seq === undefined ? first && line.at < first.createdAt : first && seq < first.seq - 1;
    if (older && !complete) continue;
    const next = items.find((m) => (seq === undefined ? m.createdAt > line.at : m.seq > seq));
    if (!next) after.push(line);
    else before.set(next.seq, [...(before.get(next.seq) ?? []), line]);
  }
  return { before, after };
}
