import type { MessageDTO } from "@/server/contracts";

/**
 * Where the "New messages" divider goes: the first of the last `unseen` messages from others. The user's own
 * messages above their cursor never count (docs/consistency.md, "Own messages"), so the divider is not simply
 * `latest - unseen + 1`: it skips back over them, and over messages deleted by their senders (which never count
 * either), among the messages loaded, and assumes none further back.
 * null when nothing is unseen.
 */
export function firstUnseenSeq(
  items: readonly Pick<MessageDTO, "seq" | "senderId" | "deleted">[],
  latest: number,
  unseen: number,
  userId: number | undefined,
): number | null {
  if (unseen <= 0) return null;
  let left = unseen;
  let seq = latest + 1;
  for (let i = items.length - 1; i >= 0; i--) {
    const m = items[i]!;
    if (m.seq > latest) continue;
    // Messages between loaded ones (a gap after a push) count as others'.
    const gap = seq - m.seq - 1;
    if (gap >= left) return seq - left;
    left -= gap;
    seq = m.seq;
    if (m.senderId !== userId && !m.deleted && --left === 0) return m.seq;
  }
  return Math.max(1, seq - left);
}
