import type { MessageDTO } from "@/server/contracts";

/** Messages of one sender closer together than this read as one run: name and time are shown once, at its top. */
export const RUN_GAP_MS = 5 * 60_000;

type RunFields = Pick<MessageDTO, "seq" | "senderId" | "createdAt">;

/**
 * Whether `message` continues the run of `previous`, the message shown just above it: same sender, the very next
 * seq (a gap may hide someone else's messages), the same day and within RUN_GAP_MS. A message below the "New
 * messages" divider starts a run, so the first unread one always says who wrote it and when.
 */
export function continuesRun(previous: RunFields | undefined, message: RunFields, afterDivider: boolean): boolean {
  if (!previous || afterDivider) return false;
  if (previous.senderId !== message.senderId || message.seq !== previous.seq + 1) return false;
  const before = new Date(previous.createdAt);
  const at = new Date(message.createdAt);
  const apart = at.getTime() - before.getTime();
  return apart >= 0 && apart < RUN_GAP_MS && before.toDateString() === at.toDateString();
}
