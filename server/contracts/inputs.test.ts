import { describe, expect, it } from "vitest";
import { AppError, parse } from "../errors.ts";
import {
  conversationIdParam,
  createConversationInput,
  credentialsInput,
  historyQuery,
  readInput,
  sendInput,
} from "./inputs.ts";

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

  it("accepts names of 1–32 letters, digits, _ and - with passwords of 8–128 characters", () => {
    const password = "correct horse";
    expect(parse(credentialsInput, { name: "Al_ice-1", password })).toEqual({ name: "Al_ice-1", password });
    for (const name of ["", "a b", "x".repeat(33), "é"])
      expect(code(() => parse(credentialsInput, { name, password }))).toBe("invalid");
    for (const bad of ["short", "x".repeat(129), "password\u0000x", "password\ud800"])
      expect(code(() => parse(credentialsInput, { name: "ann", password: bad }))).toBe("invalid");
    expect(code(() => parse(credentialsInput, { name: "ann" }))).toBe("invalid");
    expect(code(() => parse(createConversationInput, { memberNames: [] }))).toBe("invalid");
  });

  it("refuses NUL and lone surrogates in content and titles, in words that name the field", () => {
    const send = (content: string) => () => parse(sendInput, { conversationId: 1, clientMsgId: "a", content });
    expect(send("a\u0000b")).toThrow(/^The message cannot contain a NUL/);
    expect(send("a\ud800b")).toThrow(/^The message contains a broken character/);
    expect(send("a\udc00")).toThrow(/^The message contains a broken character/);
    expect(parse(sendInput, { conversationId: 1, clientMsgId: "a", content: "ok 👍" }).content).toBe("ok 👍");
    const group = (title: string) => () => parse(createConversationInput, { memberNames: ["bob"], title });
    expect(group("x\u0000")).toThrow(/^The title cannot contain a NUL/);
    expect(group("\ud83d")).toThrow(/^The title contains a broken character/);
    // Invisible only (zero-width spaces, bidi controls, a Hangul filler) as a message is: refused; blank is no title.
    for (const invisible of ["\u200b\u200b", "\u202e\u2066", "\u3164"]) {
      expect(group(invisible), JSON.stringify(invisible)).toThrow(/^A title needs something to see/);
    }
    expect(parse(createConversationInput, { memberNames: ["bob"], title: "   " }).title).toBe("");
    expect(parse(createConversationInput, { memberNames: ["bob"], title: "\u202eplans" }).title).toBe("\u202eplans");
  });

  it("reads history paging from query strings with defaults and bounds", () => {
    expect(parse(historyQuery, {})).toEqual({ limit: 50 });
    // A number too big is told its bound, naming the field; a conversation's id in a path is named too.
    expect(() => parse(historyQuery, { before: "99999999999" })).toThrow("'before' must be at most 2147483647.");
    expect(() => parse(conversationIdParam, "2147483648")).toThrow("The conversation's id must be at most 2147483647.");
    expect(() => parse(conversationIdParam, "0")).toThrow("The conversation's id must be at least 1.");
    expect(() => parse(conversationIdParam, "5e0")).toThrow("The conversation's id is a whole number in plain digits.");
    expect(parse(conversationIdParam, "42")).toBe(42);
    expect(parse(historyQuery, { before: "10", limit: "200" })).toEqual({ before: 10, limit: 200 });
    expect(code(() => parse(historyQuery, { limit: "201" }))).toBe("invalid");
    expect(code(() => parse(historyQuery, { before: "5", after: "1" }))).toBe("invalid");
  });
});
