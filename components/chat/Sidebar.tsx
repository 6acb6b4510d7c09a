"use client";

import { useState } from "react";
import { ConversationList } from "./ConversationList";
import { NewConversationForm } from "./NewConversationForm";

export function Sidebar() {
  const [creating, setCreating] = useState(false);

  return (
    <aside className="sidebar" aria-label="Conversations">
      <div className="sidebar-head">
        <h2>Chats</h2>
        <button
          type="button"
          className="button small"
          data-testid="new-conversation"
          aria-expanded={creating}
          onClick={() => setCreating(true)}
        >
          New
        </button>
      </div>
      {creating && <NewConversationForm onDone={() => setCreating(false)} />}
      <ConversationList />
    </aside>
  );
}
