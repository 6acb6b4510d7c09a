"use client";

import { useState, type FormEvent } from "react";
import { useChatStore } from "@/components/providers/ChatProvider";
import { TextField, useServerCall } from "./form";

export function NewConversationForm({ onDone }: { onDone: () => void }) {
  const createConversation = useChatStore((s) => s.createConversation);
  const [members, setMembers] = useState("");
  const [title, setTitle] = useState("");
  const { busy, error, setError, call } = useServerCall();

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    const memberNames = members.split(/[\s,]+/).filter(Boolean);
    if (memberNames.length === 0) {
      setError("Name a person to start a conversation with.");
      return;
    }
    if (await call(() => createConversation({ memberNames, title: title.trim() || undefined }))) onDone();
  }

  return (
    <form className="new-conversation" onSubmit={submit} noValidate data-testid="new-conversation-form">
      <TextField
        id="member-input"
        label="People"
        value={members}
        onValue={setMembers}
        placeholder="names, separated by commas or spaces"
        autoCapitalize="none"
        autoComplete="off"
        spellCheck={false}
        autoFocus
      />
      <TextField
        id="title-input"
        label={
          <>
            Title <span className="optional">(optional, for groups)</span>
          </>
        }
        value={title}
        onValue={setTitle}
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
