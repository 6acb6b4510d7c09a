"use client";

import { memo } from "react";
import { useChatStore } from "@/components/providers/ChatProvider";
import { formatTimestamp } from "@/components/lib/format";
import { selectConversation, selectConversationOrder, selectShownUnread } from "@/components/store/selectors";

const ConversationItem = memo(function ConversationItem({ id }: { id: number }) {
  const conversation = useChatStore(selectConversation(id));
  const unread = useChatStore(selectShownUnread(id));
  const active = useChatStore((s) => s.activeConversationId === id);
  const open = useChatStore((s) => s.openConversation);
  if (!conversation) return null;
  const last = conversation.lastMessage;

  return (
    <li>
      <button
        type="button"
        className={`conversation-item${active ? " active" : ""}${unread > 0 ? " unread" : ""}`}
        data-testid="conversation-item"
        data-conversation-id={id}
        data-unread={unread}
        aria-current={active ? "true" : undefined}
        onClick={() => open(id)}
      >
        <span className="conversation-top">
          <span className="conversation-title">
            {conversation.title}
            {conversation.kind === "direct" && conversation.members.some((m) => m.bot) && (
              <span className="bot-tag" data-testid="bot-tag">
                bot
              </span>
            )}
          </span>
          {last && (
            <time className="conversation-time" dateTime={last.createdAt}>
              {formatTimestamp(last.createdAt)}
            </time>
          )}
        </span>
        <span className="conversation-bottom">
          <span className="conversation-preview">
            {last ? (
              <>
                <span className="preview-sender">{last.senderName}:</span> {last.content}
              </>
            ) : (
              <span className="preview-empty">No messages yet</span>
            )}
          </span>
          {unread > 0 && (
            <span className="badge" data-testid="conversation-badge" aria-label={`${unread} unread`}>
              {unread}
            </span>
          )}
        </span>
      </button>
    </li>
  );
});

export function ConversationList() {
  const order = useChatStore(selectConversationOrder);
  const everSynced = useChatStore((s) => s.epoch !== null);

  if (order.length === 0) {
    return (
      <p className="sidebar-empty" data-testid="conversation-list-empty">
        {everSynced ? "No conversations yet. Start one with the button above." : "Loading conversations…"}
      </p>
    );
  }
  return (
    <ul className="conversation-list" data-testid="conversation-list">
      {order.map((id) => (
        <ConversationItem key={id} id={id} />
      ))}
    </ul>
  );
}
