"use client";

import { memo, useEffect, useLayoutEffect, useRef } from "react";
import type { MessageDTO } from "@/server/contracts";
import { useChatStore } from "@/components/providers/ChatProvider";
import { formatFullDate, formatMessageTime } from "@/components/lib/format";
import { selectMessageList, selectPending } from "@/components/store/selectors";
import { PendingItem } from "./PendingItem";

/** How close to an edge counts as "at" it, in pixels. */
const EDGE = 80;

const Message = memo(function Message({ message, own }: { message: MessageDTO; own: boolean }) {
  return (
    <li className={own ? "message own" : "message"} data-testid="message" data-seq={message.seq}>
      <div className="message-meta">
        <span className="message-sender">{own ? "You" : message.senderName}</span>
        <time dateTime={message.createdAt} title={formatFullDate(message.createdAt)}>
          {formatMessageTime(message.createdAt)}
        </time>
      </div>
      <div className="message-bubble">{message.content}</div>
    </li>
  );
});

export function MessageList({ conversationId }: { conversationId: number }) {
  const list = useChatStore(selectMessageList(conversationId));
  const pending = useChatStore(selectPending(conversationId));
  const userId = useChatStore((s) => s.user?.id);
  const loadOlder = useChatStore((s) => s.loadOlder);
  const refresh = useChatStore((s) => s.refreshMessages);

  const scroller = useRef<HTMLDivElement>(null);
  const nearBottom = useRef(true);
  /** Scroll geometry from just before older messages were requested, to keep the view still when they land. */
  const anchor = useRef<{ height: number; top: number; firstSeq: number | undefined } | null>(null);
  const pendingCount = useRef(0);

  const { items, hasMore, loading, loaded, error } = list;
  const firstSeq = items[0]?.seq;

  function requestOlder() {
    const el = scroller.current;
    if (!el || !hasMore || loading || !loaded) return;
    anchor.current = { height: el.scrollHeight, top: el.scrollTop, firstSeq };
    void loadOlder(conversationId);
  }

  function onScroll() {
    const el = scroller.current;
    if (!el) return;
    nearBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < EDGE;
    if (el.scrollTop < EDGE) requestOlder();
  }

  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const sent = pending.length > pendingCount.current;
    pendingCount.current = pending.length;
    const held = anchor.current;
    if (held && held.firstSeq !== firstSeq) {
      anchor.current = null;
      el.scrollTop = el.scrollHeight - held.height + held.top;
    } else if (nearBottom.current || sent) {
      el.scrollTop = el.scrollHeight;
      nearBottom.current = true;
    }
  }, [items, pending, firstSeq]);

  // A first page shorter than the viewport cannot be scrolled, so older pages are fetched without a scroll.
  useEffect(() => {
    const el = scroller.current;
    if (!el || !loaded || loading || !hasMore) return;
    if (el.scrollHeight <= el.clientHeight + EDGE) {
      anchor.current = { height: el.scrollHeight, top: el.scrollTop, firstSeq };
      void loadOlder(conversationId);
    }
  }, [loaded, loading, hasMore, firstSeq, conversationId, loadOlder]);

  return (
    <div className="message-scroller" data-testid="message-list" ref={scroller} onScroll={onScroll}>
      {loaded && !hasMore && items.length > 0 && <p className="history-start">Start of the conversation</p>}
      {loading && <p className="history-status">Loading…</p>}
      {error && (
        <p className="history-status form-error" role="alert">
          {error}{" "}
          <button
            type="button"
            className="link"
            onClick={() => {
              refresh(conversationId);
              requestOlder();
            }}
          >
            Retry
          </button>
        </p>
      )}
      {loaded && items.length === 0 && pending.length === 0 && (
        <p className="history-start">No messages yet. Say hello!</p>
      )}
      <ol className="message-list" aria-live="polite">
        {items.map((m) => (
          <Message key={m.id} message={m} own={m.senderId === userId} />
        ))}
        {pending.map((p) => (
          <PendingItem key={p.clientMsgId} conversationId={conversationId} item={p} />
        ))}
      </ol>
    </div>
  );
}
