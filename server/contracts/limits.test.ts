import { describe, expect, it } from "vitest";
import { sendInput } from "./inputs.ts";
import { hasVisibleText, MESSAGE_MAX_LENGTH, messageLength } from "./limits.ts";

describe("MESSAGE_MAX_LENGTH", () => {
  it("is the limit the server validates a message with, counted after trimming", () => {
    const send = (content: string) => sendInput.safeParse({ conversationId: 1, clientMsgId: "c-1", content });
    expect(send("x".repeat(MESSAGE_MAX_LENGTH)).success).toBe(true);
    expect(send(` ${"x".repeat(MESSAGE_MAX_LENGTH)} \n`).success).toBe(true);
    expect(send("x".repeat(MESSAGE_MAX_LENGTH + 1)).success).toBe(false);
  });

  it("counts characters, an emoji as one, as messageLength (the composer's counter) does", () => {
    const send = (content: string) => sendInput.safeParse({ conversationId: 1, clientMsgId: "c-1", content });
    const emoji = "😀".repeat(MESSAGE_MAX_LENGTH);
    expect(emoji.length).toBe(2 * MESSAGE_MAX_LENGTH);
    expect(messageLength(` ${emoji}\n`)).toBe(MESSAGE_MAX_LENGTH);
    expect(send(emoji).success).toBe(true);
    expect(messageLength(`${emoji}x`)).toBe(MESSAGE_MAX_LENGTH + 1);
    expect(send(`${emoji}x`).success).toBe(false);
  });
});

describe("hasVisibleText", () => {
  const send = (content: string) => sendInput.safeParse({ conversationId: 1, clientMsgId: "c-1", content });

  it("refuses a message of nothing to see, as the composer does: spaces, controls, zero-width and bidi characters", () => {
    for (const invisible of [
      "\u200b",
      "\u200b\u200c\u200d\u2060\ufeff",
      "\u202e",
      " \u2066\u2069 ",
      "\u0085",
      "\u180e",
      "\u00ad",
      "\u3164",
      "\t\u00a0\u3000",
    ]) {
      expect(hasVisibleText(invisible), JSON.stringify(invisible)).toBe(false);
      const refused = send(invisible);
      expect(refused.success, JSON.stringify(invisible)).toBe(false);
      expect(refused.error?.issues[0]?.message).toMatch(/^A message can't be empty/);
    }
  });

  it("takes anything that shows, around invisible characters too", () => {
    for (const text of [
      "a",
      "\u200bhi\u200b",
      "👍",
      "👨‍👩‍👧",
      "\u202eolleh",
      "مرحبا",
      "·",
      "\u0301e",
      "\u06dd",
      "\u0600",
      "❤\ufe0f",
    ]) {
      expect(hasVisibleText(text), JSON.stringify(text)).toBe(true);
      expect(send(text).success, JSON.stringify(text)).toBe(true);
    }
  });
});
