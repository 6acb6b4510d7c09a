"use client";

import { useChatStore } from "@/components/providers/ChatProvider";
import { selectActiveConversationId, selectConversation } from "@/components/store/selectors";
import { Composer } from "./Composer";
import { MessageList } from "./MessageList";

function OpenConversation({ id }: { id: number }) {
  const conversation = useChatStore(selectConversation(id));
  const close = useChatStore((s) => s.closeConversation);
  if (!conversation) return <EmptyPane text="This conversation is not available." />;

  return (
    <section className="pane" aria-label={conversation.title} data-testid="conversation-pane">
      <header className="pane-head">
        <button type="button" className="button ghost back" onClick={close} aria-label="Back to conversations">
          ←
        </button>
        <div className="pane-titles">
          <h2 className="pane-title" data-testid="conversation-title">
            {conversation.title}
          </h2>
          <p className="pane-members" data-testid="conversation-members">
            {conversation.members.map((m) => m.name).join(", ")}
          </p>
        </div>
      </header>
      <MessageList key={id} conversationId={id} />
      <Composer key={`composer-${id}`} conversationId={id} />
    </section>
  );
}

function EmptyPane({ text }: { text: string }) {
  return (
    <section className="pane pane-empty" data-testid="empty-state">
      <p>{text}</p>
    </section>
  );
}

export function ConversationPane() {
  const active = useChatStore(selectActiveConversationId);
  if (active === null) return <EmptyPane text="Pick a conversation, or start a new one." />;
  return <OpenConversation id={active} />;
}
