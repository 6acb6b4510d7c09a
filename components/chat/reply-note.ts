import type { MessageDTO } from "@/server/contracts";
import type { PendingMessage } from "@/components/store";

export type ReplyNote = "sending" | "sent" | "refused";

/**
 * Where a reply sent from above the latest messages stands (the list stays where the person reads, so the reply
 * lands out of sight below): still in the send queue, stored (it is among the conversation's messages), or refused.
 * Null once it is neither (discarded), so nothing is said of it.
 */
export function replyNote(
  clientMsgId: string | null,
  pending: readonly PendingMessage[],
  items: readonly MessageDTO[],
): ReplyNote | null {
  if (clientMsgId === null) return null;
  const queued = pending.find((p) => p.clientMsgId === clientMsgId);
  if (queued) return queued.status === "refused" ? "refused" : "sending";
  for (let i = items.length - 1; i >= 0; i--) if (items[i]!.clientMsgId === clientMsgId) return "sent";
  return null;
}

export const REPLY_NOTE_TEXT: Record<ReplyNote, string> = {
  sending: "Sending your reply…",
  sent: "Reply sent, below the new messages",
  refused: "Reply not sent, see below",
};
