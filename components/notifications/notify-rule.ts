import type { ConversationDTO, MessageDTO } from "@/server/contracts";
import { mentionedUserIds } from "@/server/contracts/mentions";

/**
 * Whether a message that just arrived deserves a system notification: someone else's, in a conversation the user
 * is in, while no tab of the user is being looked at (one that is would show it), and, in a muted conversation,
 * only when it mentions the user (the same rule that lets a muted conversation's mentions reach the badge). Never
 * of someone the user blocked (`blockedIds`): a group both are in still counts their messages, but does not call the
 * user to them.
 */
export function shouldNotify(
  message: MessageDTO,
  context: {
    me: number;
    conversation: ConversationDTO | undefined;
    muted: boolean;
    anyTabLooking: boolean;
    blockedIds?: readonly number[];
  },
): boolean {
  const { me, conversation, muted, anyTabLooking, blockedIds = [] } = context;
  if (message.senderId === me || !conversation || anyTabLooking) return false;
  if (blockedIds.includes(message.senderId)) return false;
  if (!muted) return true;
  return mentionedUserIds(message.content, conversation.members, message.senderId, conversation.kind).includes(me);
}

const BODY_LIMIT = 140;

/** Title and body: the conversation's title; the sender's name before the text in a group. */
export function notificationText(message: MessageDTO, conversation: ConversationDTO): { title: string; body: string } {
  const text = message.content.length > BODY_LIMIT ? `${message.content.slice(0, BODY_LIMIT - 1)}…` : message.content;
  return {
    title: conversation.title,
    body: conversation.kind === "group" ? `${message.senderName}: ${text}` : text,
  };
}

/**
 * A shown notification's life: it closes once the conversation it belongs to has counted it and then shows no
 * unread again (read in some tab), or is gone. "Counted first" matters: the message reaches the list a moment
 * before the unread update that counts it, and a count of 0 in between must not close it.
 */
export function nextLife(counted: boolean, unreadCount: number | undefined): "open" | "counted" | "close" {
  if (unreadCount === undefined) return "close";
  if (unreadCount > 0) return "counted";
  return counted ? "close" : "open";
}
