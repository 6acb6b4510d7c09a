"use client";

import { ChatProvider, useChatStore } from "@/components/providers/ChatProvider";
import { selectSessionStatus } from "@/components/store/selectors";
import { ConnectionBanner } from "./ConnectionBanner";
import { ConversationPane } from "./ConversationPane";
import { GoneNotice } from "./GoneNotice";
import { Header } from "./Header";
import { LoginScreen } from "./LoginScreen";
import { RememberOpenConversation } from "./RememberOpenConversation";
import { Sidebar } from "./Sidebar";
import { TallyMark } from "./TallyMark";

function Workspace() {
  const hasActive = useChatStore((s) => s.activeConversationId !== null);
  return (
    // The shell's test id says "signed in and showing the app" (the app badge hides at 0, so it cannot).
    <div className="app" data-testid="chat-app">
      <RememberOpenConversation />
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
