import { describe, expect, it } from "vitest";
import { sendInput } from "./inputs.ts";
import { MESSAGE_MAX_LENGTH } from "./limits.ts";

describe("MESSAGE_MAX_LENGTH", () => {
  it("is the limit the server validates a message with, counted after trimming", () => {
    const send = (content: string) => sendInput.safeParse({ conversationId: 1, clientMsgId: "c-1", content });
    expect(send("x".repeat(MESSAGE_MAX_LENGTH)).success).toBe(true);
    expect(send(` ${"x".repeat(MESSAGE_MAX_LENGTH)} \n`).success).toBe(true);
    expect(send("x".repeat(MESSAGE_MAX_LENGTH + 1)).success).toBe(false);
  });
});
