import { describe, expect, it } from "vitest";
import { ME, message } from "@/components/store/fake-transport";
import type { PendingMessage } from "@/components/store";
import { replyNote } from "./reply-note";

const reply = (status: PendingMessage["status"]): PendingMessage => ({
  clientMsgId: "reply-1",
  content: "on it",
  createdAt: "2025-01-01T12:01:00.000Z",
  status,
  error: status === "refused" ? "Too long." : null,
});

describe("the note on a reply sent from above the latest messages", () => {
  const others = [message(5, 1), message(5, 2)];

  it("follows the reply from the queue to the stored messages", () => {
    expect(replyNote("reply-1", [reply("queued")], others)).toBe("sending");
    expect(replyNote("reply-1", [reply("sending")], others)).toBe("sending");
    const stored = message(5, 3, { senderId: ME.id, senderName: ME.name, clientMsgId: "reply-1" });
    expect(replyNote("reply-1", [], [...others, stored, message(5, 4)])).toBe("sent");
  });

  it("says a refused reply was not sent, and nothing of a discarded one or without a reply", () => {
    expect(replyNote("reply-1", [reply("refused")], others)).toBe("refused");
    expect(replyNote("reply-1", [], others)).toBeNull();
    expect(replyNote(null, [reply("sending")], others)).toBeNull();
  });
});
