import type { MemberLeft, MessageDTO } from "@/server/contracts";

/** Where each "name left" line goes among the loaded messages. */
export interface LeftPlacement {
  /** Lines to show right before the message of that seq. */
  before: Map<number, MemberLeft[]>;
  /** Lines after the newest loaded message. */
  after: MemberLeft[];
}

/**
 * Places the members who left among `items` (ascending by seq) by time: each before the first message written after
 * it left. One that left before the oldest loaded message is shown only once nothing older is left to load
 * (`complete`), or it would sit above messages it did not see go by.
 */
export function placeLeft(items: readonly MessageDTO[], left: readonly MemberLeft[], complete: boolean): LeftPlacement {
  const before = new Map<number, MemberLeft[]>();
  const after: MemberLeft[] = [];
  const first = items[0];
  for (const member of [...left].sort((a, b) => a.at.localeCompare(b.at))) {
    if (first && member.at < first.createdAt && !complete) continue;
    const next = items.find((m) => m.createdAt > member.at);
    if (!next) after.push(member);
    else before.set(next.seq, [...(before.get(next.seq) ?? []), member]);
  }
  return { before, after };
}
