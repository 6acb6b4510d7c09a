import { describe, expect, it } from "vitest";
import { USER_NAME } from "./inputs.ts";
import { MESSAGE_MAX_LENGTH } from "./limits.ts";
import { isNameChar, mentionedUserIds, mentionSegments, mentionTokens, parseMentions } from "./mentions.ts";

const members = [
  { id: 1, name: "alice" },
  { id: 2, name: "Bob" },
  { id: 3, name: "carol" },
  { id: 4, name: "alice-smith" },
  { id: 5, name: "dave_2" },
];
const names = members.map((m) => m.name);

/** The segments as [text, mention] pairs, easier to read in an assertion. */
const cut = (content: string, kind: "direct" | "group" = "group", memberNames: string[] = names) =>
  mentionSegments(content, memberNames, kind).map((s) => [s.text, s.mention]);

describe("name characters", () => {
  it("are exactly the characters of an account name", () => {
    for (let code = 0; code < 0x3000; code++) {
      const char = String.fromCharCode(code);
      expect(isNameChar(char), `U+${code.toString(16)}`).toBe(USER_NAME.test(char));
    }
    expect(isNameChar(undefined)).toBe(false);
  });
});

describe("parseMentions", () => {
  it("finds @names at the start, after spaces, punctuation and line breaks", () => {
    expect(parseMentions("@alice hi")).toEqual({ names: ["alice"], all: false });
    expect(parseMentions("hi @alice")).toEqual({ names: ["alice"], all: false });
    expect(parseMentions("(@alice) [@bob] {@carol}")).toEqual({ names: ["alice", "bob", "carol"], all: false });
    expect(parseMentions("one\n@alice\t@bob")).toEqual({ names: ["alice", "bob"], all: false });
    expect(parseMentions("cc:@alice,@bob;@carol")).toEqual({ names: ["alice", "bob", "carol"], all: false });
  });

  it("ends a name at the first character that cannot be in one", () => {
    for (const after of [".", ",", "!", "?", ":", ";", "'", '"', ")", "…", " ", "\n", "/", "+", "@", "é", "😀"]) {
      expect(parseMentions(`@bob${after}x`).names, JSON.stringify(after)).toEqual(["bob"]);
    }
    expect(parseMentions("@bob's turn").names).toEqual(["bob"]);
  });

  it("takes the whole run of name characters: - and _ belong to the name", () => {
    expect(parseMentions("@alice-smith").names).toEqual(["alice-smith"]);
    expect(parseMentions("@dave_2 @dave_").names).toEqual(["dave_2", "dave_"]);
    expect(parseMentions("@bob- @-bob @_").names).toEqual(["bob-", "-bob", "_"]);
  });

  it("ignores an @ inside a word: emails and handles glued to text", () => {
    expect(parseMentions("write to bob@example.com")).toEqual({ names: [], all: false });
    expect(parseMentions("a@b")).toEqual({ names: [], all: false });
    expect(parseMentions("x_@bob y-@bob 9@bob")).toEqual({ names: [], all: false });
    // The second @ follows a name character, so only the first token counts.
    expect(parseMentions("@bob@carol").names).toEqual(["bob"]);
    // An @ after an @ is on a boundary: the @ is no name character.
    expect(parseMentions("@@bob").names).toEqual(["bob"]);
  });

  it("needs at least one name character after the @ and at most 32", () => {
    expect(parseMentions("@ @. @@ @").names).toEqual([]);
    const longest = "a".repeat(32);
    expect(parseMentions(`@${longest}`).names).toEqual([longest]);
    expect(parseMentions(`@${longest}b`).names).toEqual([]);
    expect(parseMentions(`@${longest}b, @bob`).names).toEqual(["bob"]);
  });

  it("lowercases names and lists each once, in the order they first appear", () => {
    expect(parseMentions("@Carol @BOB @carol @bob @CAROL").names).toEqual(["carol", "bob"]);
  });

  it("treats @all and @here in any case as everyone, not as names", () => {
    expect(parseMentions("@all")).toEqual({ names: [], all: true });
    expect(parseMentions("@HERE please, @bob")).toEqual({ names: ["bob"], all: true });
    expect(parseMentions("@Alll @hereby @all-hands")).toEqual({ names: ["alll", "hereby", "all-hands"], all: false });
    expect(parseMentions("me@all.org")).toEqual({ names: [], all: false });
  });

  it("reads unicode around mentions by the same boundaries", () => {
    expect(parseMentions("héllo @bob, ça va ?").names).toEqual(["bob"]);
    expect(parseMentions("é@bob 😀@carol 日本@dave_2").names).toEqual(["bob", "carol", "dave_2"]);
    expect(parseMentions("@bobé").names).toEqual(["bob"]);
    expect(parseMentions("@ålice").names).toEqual([]);
  });

  it("reads a message of the longest length, up to a mention in its last characters", () => {
    const many = "@bob ".repeat(MESSAGE_MAX_LENGTH / 5);
    expect(many.length).toBe(MESSAGE_MAX_LENGTH);
    expect(mentionTokens(many)).toHaveLength(800);
    expect(parseMentions(many)).toEqual({ names: ["bob"], all: false });
    const last = `${"x ".repeat((MESSAGE_MAX_LENGTH - 6) / 2)}@alice`;
    expect(last.length).toBe(MESSAGE_MAX_LENGTH);
    expect(parseMentions(last)).toEqual({ names: ["alice"], all: false });
    // One run of name characters as long as a message is too long to be a name.
    expect(parseMentions(`@${"a".repeat(MESSAGE_MAX_LENGTH - 1)}`)).toEqual({ names: [], all: false });
    expect(parseMentions("@".repeat(MESSAGE_MAX_LENGTH))).toEqual({ names: [], all: false });
  });
});

describe("mentionedUserIds", () => {
  it("returns the members named, case-insensitively, ascending, each once", () => {
    expect(mentionedUserIds("@carol @ALICE and @bob, @Carol", members, 5, "group")).toEqual([1, 2, 3]);
    expect(mentionedUserIds("@BOB", members, 1, "direct")).toEqual([2]);
  });

  it("never counts the sender, even when they name themselves", () => {
    expect(mentionedUserIds("@alice @bob", members, 1, "group")).toEqual([2]);
    expect(mentionedUserIds("@Alice", members, 1, "group")).toEqual([]);
  });

  it("ignores names that are not current members", () => {
    expect(mentionedUserIds("@mallory @alice-smithy @alic", members, 2, "group")).toEqual([]);
  });

  it("tells alice-smith from alice", () => {
    expect(mentionedUserIds("@alice-smith", members, 2, "group")).toEqual([4]);
    expect(mentionedUserIds("@alice, @alice-smith", members, 2, "group")).toEqual([1, 4]);
  });

  it("counts an email address as no mention", () => {
    expect(mentionedUserIds("mail bob@example.com or carol@x", members, 1, "group")).toEqual([]);
  });

  it("gives @all and @here every other member of a group", () => {
    expect(mentionedUserIds("@all", members, 3, "group")).toEqual([1, 2, 4, 5]);
    expect(mentionedUserIds("@Here and @bob", members, 3, "group")).toEqual([1, 2, 4, 5]);
  });

  it("gives @all and @here nobody in a direct conversation; names still count there", () => {
    const pair = [members[0]!, members[1]!];
    expect(mentionedUserIds("@all @here", pair, 1, "direct")).toEqual([]);
    expect(mentionedUserIds("@all @bob", pair, 1, "direct")).toEqual([2]);
  });

  it("names nobody in a message without mentions", () => {
    expect(mentionedUserIds("hello everyone", members, 1, "group")).toEqual([]);
    expect(mentionedUserIds("", members, 1, "group")).toEqual([]);
  });
});

describe("mentionSegments", () => {
  it("cuts the content into text and mentions that join back to it", () => {
    const content = "hi @bob and @Carol, see alice@example.com and @mallory!";
    expect(cut(content)).toEqual([
      ["hi ", null],
      ["@bob", "Bob"],
      [" and ", null],
      ["@Carol", "carol"],
      [", see alice@example.com and @mallory!", null],
    ]);
    expect(
      mentionSegments(content, names, "group")
        .map((s) => s.text)
        .join(""),
    ).toBe(content);
  });

  it("gives a mention alone, at the start or the end, without empty segments", () => {
    expect(cut("@bob")).toEqual([["@bob", "Bob"]]);
    expect(cut("@bob @carol")).toEqual([
      ["@bob", "Bob"],
      [" ", null],
      ["@carol", "carol"],
    ]);
    expect(cut("")).toEqual([]);
    expect(cut("no mentions")).toEqual([["no mentions", null]]);
  });

  it("names the member as the member list spells them", () => {
    expect(cut("@ALICE-SMITH @DAVE_2")).toEqual([
      ["@ALICE-SMITH", "alice-smith"],
      [" ", null],
      ["@DAVE_2", "dave_2"],
    ]);
  });

  it("marks @all and @here in a group only", () => {
    expect(cut("@ALL, @here", "group")).toEqual([
      ["@ALL", "all"],
      [", ", null],
      ["@here", "here"],
    ]);
    expect(cut("@all @here @bob", "direct")).toEqual([
      ["@all @here ", null],
      ["@bob", "Bob"],
    ]);
  });

  it("keeps punctuation and unicode next to a mention as plain text", () => {
    expect(cut("(@bob)… 😀@carol's")).toEqual([
      ["(", null],
      ["@bob", "Bob"],
      [")… 😀", null],
      ["@carol", "carol"],
      ["'s", null],
    ]);
  });

  it("leaves a name glued to more name characters as plain text", () => {
    expect(cut("@bob_ @bobby @alice-smithy x@carol")).toEqual([["@bob_ @bobby @alice-smithy x@carol", null]]);
  });

  it("agrees with mentionedUserIds about who is mentioned", () => {
    const contents = ["@all", "@bob @ALICE", "x@carol @dave_2.", "@alice-smith @here", "@nobody", "@Bob@carol"];
    for (const content of contents) {
      for (const kind of ["direct", "group"] as const) {
        const segmentNames = new Set(
          mentionSegments(content, names, kind).flatMap((s) =>
            s.mention === null ? [] : s.mention === "all" || s.mention === "here" ? names : [s.mention],
          ),
        );
        const ids = members.filter((m) => segmentNames.has(m.name) && m.id !== 3).map((m) => m.id);
        expect(mentionedUserIds(content, members, 3, kind), `${kind}: ${content}`).toEqual(ids);
      }
    }
  });
});
