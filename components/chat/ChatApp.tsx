"use client";

import { useEffect, useRef } from "react";
import { ChatProvider, useChatStore } from "@/components/providers/ChatProvider";
import { selectSessionStatus } from "@/components/store/selectors";
import { ConnectionBanner } from "./ConnectionBanner";
import { Announcer } from "./Announcer";
import { ConversationPane } from "./ConversationPane";
import { focusConversationList, focusLost } from "./focus";
import { GoneNotice } from "./GoneNotice";
import { Header } from "./Header";
import { LoginScreen } from "./LoginScreen";
import { RememberOpenConversation } from "./RememberOpenConversation";
import { Sidebar } from "./Sidebar";
import { TallyMark } from "./TallyMark";

/**
 * When the open conversation closes (Back, left, deleted here or elsewhere) and the focus was in it, the focus goes
 * to the notice that says why it closed, if one does, else to its row in the list (or the first row, or New).
 */
function useFocusAfterClose() {
  const active = useChatStore((s) => s.activeConversationId);
  const before = useRef(active);
  useEffect(() => {
    const closed = before.current;
    before.current = active;
    if (closed === null || active !== null || !focusLost()) return;
    const notice = document.querySelector<HTMLElement>('[data-testid="gone-notice-dismiss"]');
    if (notice) notice.focus();
    else focusConversationList(closed);
  }, [active]);
}

function Workspace() {
  const hasActive = useChatStore((s) => s.activeConversationId !== null);
  useFocusAfterClose();
  return (
    // The shell's test id says "signed in and showing the app" (the app badge hides at 0, so it cannot).
    <div className="app" data-testid="chat-app">
      <RememberOpenConversation />
      <Announcer />
      <Header />
      {/* The grid's one row between the header and the workspace: what the person should know now. */}
      <div className="notices">
        <ConnectionBanner />
        <GoneNotice />
      </div>
      <main className="workspace" data-has-active={hasActive}>
        <Sidebar />
        <ConversationPane />
      </main>
    </div>
  );
}

function Screens() {
  const status = useChatStore(selectSessionStatus);
  if (status === "signedIn") return <Workspace />;
  if (status === "signedOut") return <LoginScreen />;
  return (
    <main className="splash" aria-busy="true">
      <TallyMark size={48} />
    </main>
  );
}

/** The client root: everything below needs the store, and the store must never exist on the server side. */
export function ChatApp() {
  return (
    <ChatProvider>
      <Screens />
    </ChatProvider>
  );
}
