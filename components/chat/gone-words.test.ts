import { describe, expect, it } from "vitest";
import type { GoneNoticeState } from "@/components/store/types";
import { goneWords } from "./gone-words";

const words = (state: GoneNoticeState) =>
  goneWords(state)
    .map((part) => (typeof part === "string" ? part : `“${part.title}”`))
    .join("");

describe("goneWords", () => {
  it("says who removed the conversation and where", () => {
    const group = { title: "Trip", conversationKind: "group" as const };
    expect(words({ ...group, cause: { kind: "left" } })).toBe("You left “Trip” in another tab or on another device.");
    expect(words({ ...group, cause: { kind: "deleted", by: "you" } })).toBe(
      "You deleted “Trip” in another tab or on another device.",
    );
    expect(words({ ...group, cause: { kind: "deleted", by: "carol" } })).toBe("carol deleted “Trip”.");
    expect(words({ title: "bob", conversationKind: "direct", cause: { kind: "deleted", by: "bob" } })).toBe(
      "bob deleted your conversation.",
    );
    expect(words({ ...group, cause: { kind: "deleted", by: null } })).toBe("“Trip” was deleted.");
    expect(words({ ...group, cause: { kind: "removed", by: "carol" } })).toBe("carol removed you from “Trip”.");
    expect(words({ ...group, cause: { kind: "removed", by: null } })).toBe("You were removed from “Trip”.");
    // Not "“bob” was deleted": it is the conversation that went, not bob.
    expect(words({ title: "bob", conversationKind: "direct", cause: { kind: "deleted", by: null } })).toBe(
      "Your conversation with “bob” was deleted.",
    );
  });

  it("falls back to both causes when the server did not say, and to 'this conversation' without a title", () => {
    expect(words({ title: "Trip", conversationKind: "group", cause: { kind: "unknown" } })).toBe(
      "“Trip” is gone: it was deleted, or you left it or were removed.",
    );
    expect(words({ title: null, conversationKind: null, cause: { kind: "left" } })).toBe(
      "You left this conversation in another tab or on another device.",
    );
    expect(words({ title: null, conversationKind: null, cause: { kind: "unknown" } })).toBe(
      "This conversation is gone: it was deleted, or you left it or were removed.",
    );
  });
});
