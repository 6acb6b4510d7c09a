"use client";

import { useChatStore } from "@/components/providers/ChatProvider";
import { selectConnected, selectConversation } from "@/components/store/selectors";
import type { PendingMessage } from "@/components/store";
import { MessageText } from "./MessageText";

/**
 * A message of the send queue. Queued and sending ones wait on their own; a refused one says why and waits for the
 * person: Retry (same clientMsgId, to the end of the queue) or Discard (the server never stored it).
 */
export function PendingItem({ conversationId, item }: { conversationId: number; item: PendingMessage }) {
  const connected = useChatStore(selectConnected);
  const retry = useChatStore((s) => s.retryPending);
  const discard = useChatStore((s) => s.discardPending);
  const conversation = useChatStore(selectConversation(conversationId));
  const refused = item.status === "refused";
  const state = refused
    ? "not sent"
    : item.status === "sending"
      ? "sending…"
      : connected
        ? "queued"
        : "waiting for connection";

  return (
    <li
      className={refused ? "message own pending refused" : "message own pending"}
      data-testid="message-pending"
      data-status={item.status}
      aria-busy={!refused}
    >
      <div className="message-meta">
        <span className="message-sender">You</span>
        <span>{state}</span>
      </div>
      <div className="message-bubble" dir="auto">
        <MessageText
          content={item.content}
          memberNames={conversation?.members.map((m) => m.name) ?? []}
          kind={conversation?.kind ?? "direct"}
          myName={null}
        />
      </div>
      {item.error && (
        <p
          className={refused ? "pending-note form-error" : "pending-note"}
          data-testid="pending-error"
          role={refused ? "alert" : undefined}
        >
          {item.error}
        </p>
      )}
      {refused && (
        <div className="pending-actions">
          <button
            type="button"
            className="button small"
            data-testid="pending-retry"
            onClick={() => retry(conversationId, item.clientMsgId)}
          >
            Retry
          </button>
          <button
            type="button"
            className="button small ghost danger"
            data-testid="pending-discard"
            onClick={() => discard(conversationId, item.clientMsgId)}
          >
            Discard
          </button>
        </div>
      )}
    </li>
  );
}
