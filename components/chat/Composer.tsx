"use client";

import { useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { MESSAGE_MAX_LENGTH } from "@/server/contracts/limits";
import { useChatStore } from "@/components/providers/ChatProvider";

/** The counter appears within this share of the limit, so most messages never see it. */
const COUNTER_FROM = Math.floor(MESSAGE_MAX_LENGTH * 0.9);
const count = new Intl.NumberFormat("en-US");

/** Keyed by conversation (ConversationPane), so each conversation starts from its own saved draft. */
export function Composer({ conversationId }: { conversationId: number }) {
  const sendMessage = useChatStore((s) => s.sendMessage);
  const saveDraft = useChatStore((s) => s.saveDraft);
  const draftOf = useChatStore((s) => s.draftOf);
  const [draft, setDraft] = useState(() => draftOf(conversationId));
  const inputRef = useRef<HTMLTextAreaElement>(null);

  // What the server counts: the trimmed text.
  const length = draft.trim().length;
  const tooLong = length > MESSAGE_MAX_LENGTH;

  function edit(text: string) {
    setDraft(text);
    saveDraft(conversationId, text);
  }

  function send() {
    if (!draft.trim() || tooLong) return;
    // The queue owns the message from here (shown pending, sent when it can be), so the composer is free at once.
    void sendMessage(conversationId, draft);
    setDraft("");
    inputRef.current?.focus();
  }

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    send();
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key !== "Enter" || event.shiftKey || event.nativeEvent.isComposing) return;
    event.preventDefault();
    send();
  }

  return (
    <form className="composer" onSubmit={onSubmit}>
      <div className="composer-row">
        <textarea
          ref={inputRef}
          data-testid="message-input"
          className="composer-input"
          value={draft}
          rows={1}
          placeholder="Write a message…"
          aria-label="Message"
          aria-invalid={tooLong || undefined}
          aria-describedby={length >= COUNTER_FROM ? `composer-counter-${conversationId}` : undefined}
          autoFocus
          onChange={(e) => edit(e.target.value)}
          onKeyDown={onKeyDown}
        />
        <button
          type="submit"
          className="button primary"
          data-testid="send-button"
          disabled={tooLong}
          // Keeps the caret in the textarea when the button is clicked.
          onMouseDown={(e) => e.preventDefault()}
        >
          Send
        </button>
      </div>
      {length >= COUNTER_FROM && (
        <p
          id={`composer-counter-${conversationId}`}
          className={tooLong ? "composer-counter over" : "composer-counter"}
          data-testid="char-counter"
          data-over={tooLong}
        >
          {count.format(length)} / {count.format(MESSAGE_MAX_LENGTH)}
          {tooLong && ` — ${count.format(length - MESSAGE_MAX_LENGTH)} too many to send`}
        </p>
      )}
    </form>
  );
}
