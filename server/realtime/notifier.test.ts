import { describe, expect, it } from "vitest";
import type { MessageDTO } from "../contracts/index.ts";
import { parseDelivery } from "./notifier.ts";

const message: MessageDTO = {
  id: 7,
  conversationId: 3,
  seq: 4,
  senderId: 1,
  senderName: "alice",
  content: "hi\nthere",
  createdAt: "2026-11-26T00:00:00.000Z",
  clientMsgId: "c-1",
};

describe("parseDelivery", () => {
  it("reads the head and turns the members' replies into the updates that changed", () => {
    const head = JSON.stringify({ from: "inst-a", memberIds: [1, 2], message });
    const replies = [
      [0, 0, 9, "e1", 0, 0, 0, 0, 0], // the sender: nothing changed
      [4, 6, 12, "e2", 1, 1, 2, 0, 5], // the recipient: 4 unread, 1 mention, marked (version 5)
    ];
    expect(parseDelivery(`${head}\n${JSON.stringify(replies)}`)).toEqual({
      from: "inst-a",
      memberIds: [1, 2],
      message,
      updates: [
        {
          userId: 2,
          update: {
            conversationId: 3,
            unreadCount: 4,
            mentionCount: 1,
            muted: false,
            markedUnread: true,
            markVersion: 5,
            totalUnread: 6,
            totalMentions: 2,
            version: 12,
            epoch: "e2",
          },
        },
      ],
    });
  });

  it("is not a delivery when it names no member, or members that are not user ids (a push to no room reaches everyone)", () => {
    const payload = (memberIds: unknown) => `${JSON.stringify({ from: "x", memberIds, message })}\n[]`;
    expect(parseDelivery(payload([]))).toBeNull();
    expect(parseDelivery(payload(["1"]))).toBeNull();
    expect(parseDelivery(payload([1.5]))).toBeNull();
    expect(parseDelivery(payload(null))).toBeNull();
    expect(parseDelivery(payload([1]))).not.toBeNull();
  });

  it("is not a delivery without the newline after its head, and a missing reply changes nobody", () => {
    expect(parseDelivery(JSON.stringify({ from: "x", memberIds: [], message }))).toBeNull();
    const head = JSON.stringify({ from: "x", memberIds: [1, 2], message });
    expect(parseDelivery(`${head}\n[[-1]]`)?.updates).toEqual([]);
  });
});
