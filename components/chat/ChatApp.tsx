"use client";

import { ChatProvider, useChatStore } from "@/components/providers/ChatProvider";
import { selectSessionStatus } from "@/components/store/selectors";
import { ConnectionBanner } from "./ConnectionBanner";
import { ConversationPane } from "./ConversationPane";
import { Header } from "./Header";
import { LoginScreen } from "./LoginScreen";
import { Sidebar } from "./Sidebar";
import { TallyMark } from "./TallyMark";

function Workspace() {
  const hasActive = useChatStore((s) => s.activeConversationId !== null);
  return (
    <div className="app">
      <Header />
      <ConnectionBanner />
      <div className="workspace" data-has-active={hasActive}>
        <Sidebar />
        <ConversationPane />
      </div>
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
