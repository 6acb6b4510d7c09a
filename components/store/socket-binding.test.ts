import { describe, expect, it } from "vitest";
import { update } from "./fake-transport";
import { createSocketLink, type ChatSocket, type HttpTransport } from "./socket-binding";

/** A connected socket that records what is emitted and acknowledges with `answer`. */
function recordingSocket(answer: unknown) {
  const emitted: unknown[][] = [];
  const socket = {
    connected: true,
    timeout: () => ({
      emitWithAck: async (...args: unknown[]) => {
        emitted.push(args);
        return answer;
      },
    }),
  };
  return { emitted, socket: socket as unknown as ChatSocket };
}

const unusedHttp = {} as HttpTransport;

describe("socket transport", () => {
  it("sends a mute as conversation:mute and resolves with its acknowledgement", async () => {
    const ack = { ok: true, unread: update(3, 2, 0, 5, "e1", { muted: true }) };
    const { emitted, socket } = recordingSocket(ack);
    const link = createSocketLink(unusedHttp);
    link.attach(socket);
    await expect(link.transport.mute?.({ conversationId: 3, muted: true })).resolves.toEqual(ack);
    expect(emitted).toEqual([["conversation:mute", { conversationId: 3, muted: true }]]);
  });

  it("sends a mark as conversation:markUnread", async () => {
    const ack = { ok: true, unread: update(3, 1, 1, 5, "e1", { markedUnread: true, markVersion: 1 }) };
    const { emitted, socket } = recordingSocket(ack);
    const link = createSocketLink(unusedHttp);
    link.attach(socket);
    await expect(link.transport.markUnread?.({ conversationId: 3 })).resolves.toEqual(ack);
    expect(emitted).toEqual([["conversation:markUnread", { conversationId: 3 }]]);
  });

  it("refuses to queue a mute while disconnected (an unknown outcome for the store)", async () => {
    const link = createSocketLink(unusedHttp);
    await expect(link.transport.mute?.({ conversationId: 3, muted: true })).rejects.toThrow("not connected");
  });
});
