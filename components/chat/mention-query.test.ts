import { describe, expect, it } from "vitest";
import { parseMentions } from "@/server/contracts/mentions";
import { applyMention, mentionOptions, mentionQueryAt } from "./mention-query";

/** The query for a text with `|` marking the caret. */
const queryIn = (marked: string) => mentionQueryAt(marked.replace("|", ""), marked.indexOf("|"));

describe("mentionQueryAt", () => {
  it("finds the @token being typed at the start, after a space or punctuation", () => {
    expect(queryIn("@|")).toEqual({ start: 0, end: 1, prefix: "" });
    expect(queryIn("hi @bo|")).toEqual({ start: 3, end: 6, prefix: "bo" });
    expect(queryIn("line\n(@Ca|")).toEqual({ start: 6, end: 9, prefix: "Ca" });
    expect(queryIn("é@b|")).toEqual({ start: 1, end: 3, prefix: "b" });
  });

  it("spans the whole name when the caret sits inside it", () => {
    expect(queryIn("hi @bo|b there")).toEqual({ start: 3, end: 7, prefix: "bo" });
    expect(queryIn("@|bob")).toEqual({ start: 0, end: 4, prefix: "" });
  });

  it("finds nothing off a token, inside an email, or past the longest name", () => {
    expect(queryIn("hello|")).toBeNull();
    expect(queryIn("|")).toBeNull();
    expect(queryIn("@bob |")).toBeNull();
    expect(queryIn("bob@exa|")).toBeNull();
    expect(queryIn("x_@|")).toBeNull();
    expect(queryIn("@bob.|")).toBeNull();
    expect(queryIn(`@${"a".repeat(32)}|`)).toEqual({ start: 0, end: 33, prefix: "a".repeat(32) });
    expect(queryIn(`@${"a".repeat(33)}|`)).toBeNull();
    expect(queryIn(`@${"a".repeat(20)}|${"a".repeat(13)}`)).toBeNull();
  });

  it("refuses a caret outside the text", () => {
    expect(mentionQueryAt("@bob", 5)).toBeNull();
    expect(mentionQueryAt("@bob", -1)).toBeNull();
  });
});

describe("mentionOptions", () => {
  const members = [
    { id: 1, name: "alice" },
    { id: 2, name: "Bob" },
    { id: 3, name: "bea" },
    { id: 4, name: "carol" },
    { id: 5, name: "Here" },
  ];
  const names = (prefix: string, kind: "direct" | "group" = "group", selfId = 1) =>
    mentionOptions(prefix, members, selfId, kind).map((o) => o.name);

  it("offers the other members whose names start with the prefix, in any case, by name", () => {
    expect(names("b")).toEqual(["bea", "Bob"]);
    expect(names("BO")).toEqual(["Bob"]);
    expect(names("car")).toEqual(["carol"]);
    expect(names("x")).toEqual([]);
  });

  it("never offers the signed-in user", () => {
    expect(names("a")).toEqual(["all"]);
    expect(names("a", "group", 4)).toEqual(["alice", "all"]);
  });

  it("adds all and here in a group only, marked as everyone", () => {
    expect(names("")).toEqual(["bea", "Bob", "carol", "all", "here"]);
    expect(names("", "direct")).toEqual(["bea", "Bob", "carol"]);
    expect(names("H")).toEqual(["here"]);
    expect(mentionOptions("al", members, 2, "group")).toEqual([
      { name: "alice", everyone: false },
      { name: "all", everyone: true },
    ]);
  });
});

describe("applyMention", () => {
  const pick = (marked: string, name: string) => {
    const text = marked.replace("|", "");
    const query = mentionQueryAt(text, marked.indexOf("|"));
    if (!query) throw new Error(`no query in ${marked}`);
    const next = applyMention(text, query, name);
    return `${next.text.slice(0, next.caret)}|${next.text.slice(next.caret)}`;
  };

  it("puts @name and a space in place of the token, the caret after them", () => {
    expect(pick("@|", "bob")).toBe("@bob |");
    expect(pick("hi @b|", "Bob")).toBe("hi @Bob |");
    expect(pick("hi @b|, you?", "Bob")).toBe("hi @Bob |, you?");
  });

  it("replaces the whole name the caret is in and reuses a following space", () => {
    expect(pick("hi @bo|bby there", "Bob")).toBe("hi @Bob |there");
    expect(pick("@a|\nnext", "all")).toBe("@all |\nnext");
  });

  it("leaves a text whose mention the rule reads as the name picked", () => {
    const text = "ask@x.org @car";
    const query = mentionQueryAt(text, text.length)!;
    expect(parseMentions(applyMention(text, query, "carol").text)).toEqual({ names: ["carol"], all: false });
  });
});
