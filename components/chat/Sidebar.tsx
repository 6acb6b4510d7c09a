"use client";

import { useRef, useState } from "react";
import { BlockedPeople } from "./Blocking";
import { ConversationList } from "./ConversationList";
import { NewConversationForm } from "./NewConversationForm";

export function Sidebar() {
  const [creating, setCreating] = useState(false);
  const newButton = useRef<HTMLButtonElement>(null);

  return (
    <aside className="sidebar" aria-label="Conversations">
      <div className="sidebar-head">
        <h2>Chats</h2>
        <button
          ref={newButton}
          type="button"
          className="button small"
          data-testid="new-conversation"
          aria-expanded={creating}
          onClick={() => setCreating(true)}
        >
          New
        </button>
      </div>
      {creating && (
        <NewConversationForm
          onDone={() => setCreating(false)}
          onCancel={() => {
            setCreating(false);
            // Back where the person opened the form, not on the page itself.
            newButton.current?.focus();
          }}
        />
      )}
      <ConversationList />
      <BlockedPeople />
    </aside>
  );
}
