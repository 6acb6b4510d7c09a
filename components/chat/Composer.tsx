"use client";

import { useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { useChatStore } from "@/components/providers/ChatProvider";
import { selectSendError } from "@/components/store/selectors";

export function Composer({ conversationId }: { conversationId: number }) {
  const sendMessage = useChatStore((s) => s.sendMessage);
  const clearSendError = useChatStore((s) => s.clearSendError);
  const error = useChatStore(selectSendError(conversationId));
  const [draft, setDraft] = useState("");
  const inputRef = useRef<HTMLTextAreaElement>(null);

  async function send() {
    const content = draft;
    if (!content.trim()) return;
    // Cleared at once so the next message can be typed while this one is pending; restored if it fails.
    setDraft("");
    inputRef.current?.focus();
    const ok = await sendMessage(conversationId, content);
    if (!ok) setDraft((current) => (current === "" ? content : current));
  }

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    void send();
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key !== "Enter" || event.shiftKey || event.nativeEvent.isComposing) return;
    event.preventDefault();
    void send();
  }

  return (
    <form className="composer" onSubmit={onSubmit}>
      {error && (
        <p className="form-error composer-error" role="alert" data-testid="send-error">
          {error}
        </p>
      )}
      <div className="composer-row">
        <textarea
          ref={inputRef}
          data-testid="message-input"
          className="composer-input"
          value={draft}
          rows={1}
          placeholder="Write a message…"
          aria-label="Message"
          autoFocus
          onChange={(e) => {
            setDraft(e.target.value);
            if (error) clearSendError(conversationId);
          }}
          onKeyDown={onKeyDown}
        />
        <button
          type="submit"
          className="button primary"
          data-testid="send-button"
          // Keeps the caret in the textarea when the button is clicked.
          onMouseDown={(e) => e.preventDefault()}
        >
          Send
        </button>
      </div>
    </form>
  );
}
