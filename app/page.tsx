import { ChatApp } from "@/components/chat/ChatApp";

export default function Page() {
  return <ChatApp />;
}
