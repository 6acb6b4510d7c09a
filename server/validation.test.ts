import { describe, expect, it } from "vitest";
import { AppError } from "./errors.ts";
import { createConversationInput, historyQuery, parse, readInput, sendInput, signInInput } from "./validation.ts";

function code(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof AppError ? err.code : "other";
  }
}

describe("payload validation", () => {
  it("trims content and bounds it to 1–4000 characters", () => {
    expect(parse(sendInput, { conversationId: 1, clientMsgId: "a-1", content: "  hi  " }).content).toBe("hi");
    expect(code(() => parse(sendInput, { conversationId: 1, clientMsgId: "a", content: " \n " }))).toBe("invalid");
    expect(code(() => parse(sendInput, { conversationId: 1, clientMsgId: "a", content: "x".repeat(4001) }))).toBe(
      "invalid",
    );
    expect(
      parse(sendInput, { conversationId: 1, clientMsgId: "a", content: `  ${"x".repeat(4000)}  ` }).content,
    ).toHaveLength(4000);
  });

  it("refuses unknown fields, wrong types and negative seqs", () => {
    expect(code(() => parse(sendInput, { conversationId: 1, clientMsgId: "a", content: "x", more: 1 }))).toBe(
      "invalid",
    );
    expect(code(() => parse(readInput, { conversationId: 1.5, seq: 1 }))).toBe("invalid");
    expect(code(() => parse(readInput, { conversationId: 1, seq: -1 }))).toBe("invalid");
    expect(parse(readInput, { conversationId: 1, seq: 0 })).toEqual({ conversationId: 1, seq: 0 });
  });

  it("accepts names of 1–32 letters, digits, _ and -", () => {
    expect(parse(signInInput, { name: "Al_ice-1" })).toEqual({ name: "Al_ice-1" });
    for (const name of ["", "a b", "x".repeat(33), "é"])
      expect(code(() => parse(signInInput, { name }))).toBe("invalid");
    expect(code(() => parse(createConversationInput, { memberNames: [] }))).toBe("invalid");
  });

  it("reads history paging from query strings with defaults and bounds", () => {
    expect(parse(historyQuery, {})).toEqual({ limit: 50 });
    expect(parse(historyQuery, { before: "10", limit: "200" })).toEqual({ before: 10, limit: 200 });
    expect(code(() => parse(historyQuery, { limit: "201" }))).toBe("invalid");
    expect(code(() => parse(historyQuery, { before: "5", after: "1" }))).toBe("invalid");
  });
});
