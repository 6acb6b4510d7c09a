"use client";

import { useState, type FormEvent } from "react";
import { useChatStore } from "@/components/providers/ChatProvider";
import { TextField, useServerCall } from "./form";
import { namesIn, PeopleField } from "./PeopleField";

/** `onDone` once the conversation is created (it opens); `onCancel` for Cancel and Escape. */
export function NewConversationForm({ onDone, onCancel }: { onDone: () => void; onCancel: () => void }) {
  const createConversation = useChatStore((s) => s.createConversation);
  const [members, setMembers] = useState("");
  const [title, setTitle] = useState("");
  const { busy, error, setError, call } = useServerCall();

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    const memberNames = namesIn(members);
    if (memberNames.length === 0) {
      setError("Name a person to start a conversation with.");
      return;
    }
    if (await call(() => createConversation({ memberNames, title: title.trim() || undefined }))) onDone();
  }

  return (
    <form
      className="new-conversation"
      onSubmit={submit}
      noValidate
      data-testid="new-conversation-form"
      // Escape closes the form, unless it only closed the list of names (which marks it handled).
      onKeyDown={(event) => {
        if (event.key === "Escape" && !event.defaultPrevented) {
          event.preventDefault();
          onCancel();
        }
      }}
    >
      <PeopleField
        id="member-input"
        // The rule is in the label, not only the placeholder: a placeholder goes once typing starts, and at a
        // sidebar's width a sentence there was cut off.
        label={
          <>
            People <span className="optional">(commas or spaces between names)</span>
          </>
        }
        value={members}
        onValue={setMembers}
        placeholder="e.g. ada_l, grace"
      />
      <TextField
        id="title-input"
        label={
          <>
            Title <span className="optional">(optional; makes a group, even of two)</span>
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
        <button type="button" className="button ghost" onClick={onCancel}>
          Cancel
        </button>
        {/* Not `disabled` while busy: a disabled button loses the keyboard's focus (a second submit is ignored). */}
        <button type="submit" className="button primary" data-testid="create-conversation" aria-disabled={busy}>
          {busy ? "Creating…" : "Start"}
        </button>
      </div>
    </form>
  );
}
