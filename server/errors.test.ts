import { z } from "zod";
import { describe, expect, it } from "vitest";
import { createConversationInput, credentialsInput, historyQuery, readInput, sendInput } from "./contracts/inputs.ts";
import { AppError, noSuchUsers, parse } from "./errors.ts";

/** The message `parse` refuses `input` with (and that it refuses it as `invalid`). */
function refusal(schema: z.ZodType, input: unknown): string {
  try {
    parse(schema, input);
  } catch (err) {
    if (err instanceof AppError && err.code === "invalid") return err.message;
    throw err;
  }
  throw new Error("accepted");
}

const message = (content: unknown) => ({ conversationId: 1, clientMsgId: "m-1", content });

describe("validation errors in words", () => {
  it("says what is wrong with a message without naming a field", () => {
    expect(refusal(sendInput, message("   "))).toBe("A message can't be empty.");
    expect(refusal(sendInput, message("x".repeat(4001)))).toBe("A message can be at most 4000 characters.");
    expect(refusal(sendInput, message(undefined))).toBe("The message is missing.");
    expect(refusal(sendInput, message(42))).toBe("The message should be text.");
  });

  it("asks for a person, and names a person that cannot exist", () => {
    expect(refusal(createConversationInput, { memberNames: [] })).toBe("Name a person to start a conversation with.");
    expect(refusal(createConversationInput, {})).toBe("The list of people is missing.");
    expect(refusal(createConversationInput, { memberNames: ["bob", "b ob"] })).toBe("No user called 'b ob'.");
    // A name is at most 32 characters: a longer one is quoted only so far, whatever its length.
    expect(refusal(createConversationInput, { memberNames: ["x".repeat(60_000)] })).toBe(
      `No user called '${"x".repeat(39)}…'.`,
    );
    expect(refusal(createConversationInput, { memberNames: Array.from({ length: 51 }, (_, i) => `u${i}`) })).toBe(
      "A conversation can have at most 50 other people.",
    );
    expect(refusal(createConversationInput, { memberNames: ["bob"], title: "t".repeat(65) })).toBe(
      "A title can be at most 64 characters.",
    );
  });

  it("words sign-in problems as sentences", () => {
    expect(refusal(credentialsInput, { name: "a b", password: "long enough" })).toBe(
      "A name cannot have a space: use a–z, A–Z, 0–9, _ or - (1–32 characters).",
    );
    // The first character the rule refuses, quoted, or by its code when quoting it would hide it or turn the
    // sentence around; then the length.
    const nameRefusal = (name: string) => refusal(credentialsInput, { name, password: "long enough" });
    expect(nameRefusal("José")).toBe("A name cannot have 'é': use a–z, A–Z, 0–9, _ or - (1–32 characters).");
    expect(nameRefusal("ann\u202Eevil")).toBe(
      "A name cannot have U+202E: use a–z, A–Z, 0–9, _ or - (1–32 characters).",
    );
    expect(nameRefusal("a".repeat(33))).toBe("A name is at most 32 characters; this one has 33.");
    expect(nameRefusal("   ")).toBe("Type a name: 1–32 characters, a–z, A–Z, 0–9, _ or -.");
    expect(refusal(credentialsInput, { name: "ann", password: "short" })).toBe(
      "A password needs at least 8 characters.",
    );
    expect(refusal(credentialsInput, { name: "ann" })).toBe("The password is missing.");
  });

  it("has a sentence for rules without one of their own, never a field path or zod's wording", () => {
    expect(refusal(sendInput, { ...message("hi"), extra: 1 })).toBe(
      "The request has a field Tally does not know: 'extra'.",
    );
    expect(refusal(readInput, { conversationId: 1, seq: -1 })).toBe("The read position must be at least 0.");
    expect(refusal(readInput, { conversationId: "x", seq: 1 })).toBe("The conversation should be a number.");
    expect(refusal(historyQuery, { limit: "500" })).toBe("'limit' must be at most 200.");
    expect(refusal(historyQuery, { before: "5", after: "1" })).toBe("Use either before or after, not both.");
    expect(refusal(z.strictObject({ speed: z.enum(["slow", "fast"]) }), { speed: "warp" })).toBe(
      "'speed' must be one of 'slow', 'fast'.",
    );
    expect(refusal(z.number(), "x")).toBe("The request should be a number.");
    for (const input of [message(""), { memberNames: [] }, { conversationId: 1.5, seq: 1 }, "x"])
      for (const schema of [sendInput, createConversationInput, readInput])
        expect(refusal(schema, input)).not.toMatch(/^\w+(\.\w+)*: |Invalid input|expected/);
  });

  it("states the bound a number field has, however far past it a number is", () => {
    expect(refusal(readInput, { conversationId: 0, seq: 1 })).toBe("The conversation must be at least 1.");
    expect(refusal(readInput, { conversationId: -1, seq: 1 })).toBe("The conversation must be at least 1.");
    for (const big of [2 ** 31, 2 ** 53 + 2, 1e308]) {
      expect(refusal(readInput, { conversationId: big, seq: 1 })).toBe("The conversation must be at most 2147483647.");
      expect(refusal(readInput, { conversationId: 1, seq: big })).toBe("The read position must be at most 2147483647.");
    }
    expect(refusal(readInput, { conversationId: 1.5, seq: 1 })).toBe("The conversation should be a whole number.");
    expect(refusal(z.strictObject({ n: z.number().positive() }), { n: 0 })).toBe("'n' must be more than 0.");
  });

  it("names at most three unknown fields, each cut short, so the answer stays small", () => {
    const many = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i]));
    expect(refusal(readInput, { conversationId: 1, seq: 1, ...many })).toBe(
      "The request has fields Tally does not know: 'k0', 'k1', 'k2', 49997 more.",
    );
    expect(refusal(readInput, { conversationId: 1, seq: 1, ["x".repeat(500)]: 1 })).toBe(
      `The request has a field Tally does not know: '${"x".repeat(40)}…'.`,
    );
  });

  it("lists unknown users by name", () => {
    expect(noSuchUsers(["x"])).toBe("No user called 'x'.");
    expect(noSuchUsers(["x", "y"])).toBe("No users called 'x' or 'y'.");
    expect(noSuchUsers(["x", "y", "z"])).toBe("No users called 'x', 'y' or 'z'.");
  });
});
