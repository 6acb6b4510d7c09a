"use client";

import { useState, type FormEvent } from "react";
import { useChatStore } from "@/components/providers/ChatProvider";

export function NewConversationForm({ onDone }: { onDone: () => void }) {
  const createConversation = useChatStore((s) => s.createConversation);
  const [members, setMembers] = useState("");
  const [title, setTitle] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    const memberNames = members.split(/[\s,]+/).filter(Boolean);
    if (memberNames.length === 0) {
      setError("Enter at least one user name.");
      return;
    }
    setBusy(true);
    setError(null);
    const failure = await createConversation({ memberNames, title: title.trim() || undefined });
    setBusy(false);
    if (failure) setError(failure);
    else onDone();
  }

  return (
    <form className="new-conversation" onSubmit={submit} noValidate data-testid="new-conversation-form">
      <label htmlFor="member-input">People</label>
      <input
        id="member-input"
        data-testid="member-input"
        value={members}
        onChange={(e) => setMembers(e.target.value)}
        placeholder="names, separated by commas or spaces"
        autoCapitalize="none"
        autoComplete="off"
        spellCheck={false}
        autoFocus
      />
      <label htmlFor="title-input">
        Title <span className="optional">(optional, for groups)</span>
      </label>
      <input
        id="title-input"
        data-testid="title-input"
        value={title}
        onChange={(e) => setTitle(e.target.value)}
        autoComplete="off"
      />
      {error && (
        <p className="form-error" role="alert" data-testid="create-error">
          {error}
        </p>
      )}
      <div className="form-actions">
        <button type="button" className="button ghost" onClick={onDone}>
          Cancel
        </button>
        <button type="submit" className="button primary" data-testid="create-conversation" disabled={busy}>
          {busy ? "Creating…" : "Start"}
        </button>
      </div>
    </form>
  );
}
