import { describe, expect, it } from "vitest";
import { toConversationDTO, type ConversationRow } from "./dto.ts";

const [alice, bob, dave] = [
  { id: 1, name: "alice" },
  { id: 2, name: "bob" },
  { id: 4, name: "dave" },
];
const noUnread = { unreadCount: 0, mentionCount: 0, muted: false, markedUnread: false, markVersion: 0 };

function row(kind: "direct" | "group", members: (typeof alice)[], title: string | null = null): ConversationRow {
  return {
    id: 7,
    kind,
    title,
    lastSeq: 0,
    createdAt: "2026-12-01T00:00:00.000Z",
    createdById: alice.id,
    memberships: members.map((user) => ({ userId: user.id, lastReadSeq: 0, user })),
  };
}
const titleOf = (r: ConversationRow, viewer = alice.id) => toConversationDTO(r, viewer, noUnread, null).title;

describe("a conversation's title", () => {
  it("is the other member's name in a direct conversation", () => {
    expect(titleOf(row("direct", [alice, dave]))).toBe("dave");
    expect(titleOf(row("direct", [alice, dave]), dave.id)).toBe("alice");
  });

  it("is a group's own title, whoever is left", () => {
    expect(titleOf(row("group", [alice, bob, dave], "Weekend plans"))).toBe("Weekend plans");
    expect(titleOf(row("group", [alice, dave], "Weekend plans"))).toBe("Weekend plans");
  });

  it("names an untitled group's other members, and says it is a group once one other is left", () => {
    expect(titleOf(row("group", [alice, bob, dave]))).toBe("bob, dave");
    // Bob left: not a direct conversation with dave, and it does not read like one.
    expect(titleOf(row("group", [alice, dave]))).toBe("Group with dave");
    expect(titleOf(row("group", [alice, dave]), dave.id)).toBe("Group with alice");
    expect(titleOf(row("group", [alice]))).toBe("Just you");
  });
});
