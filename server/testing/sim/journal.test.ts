import { describe, expect, it } from "vitest";
import type { UnreadUpdate } from "../../contracts/index.ts";
import { Journal } from "./journal.ts";

const shows = (muted: boolean): UnreadUpdate => ({
  conversationId: 18,
  unreadCount: 0,
  mentionCount: 0,
  muted,
  markedUnread: false,
  markVersion: 0,
  totalUnread: 0,
  totalMentions: 0,
  version: 1,
  epoch: "e1",
});

describe("the journal's mutes", () => {
  it("judges a mute asked and answered with no other of the pair in flight", () => {
    const journal = new Journal();
    const unmute = journal.muteIssued(4, 18);
    journal.muteAnswered(4, 18, false, unmute, shows(false));
    expect(journal.mutes).toEqual([{ userId: 4, conversationId: 18, muted: false, acknowledged: false, ask: 1 }]);
  });

  it("does not judge a mute overtaken by one asked before it was answered (its answer may show the later one)", () => {
    // Seed 780613474 of the soak: tab 0 unmutes, tab 1 mutes the same conversation before tab 0's answer; the mute
    // commits version 3 first and the unmute's answer, after version 2, shows muted (Redis keeps the highest).
    const journal = new Journal();
    const unmute = journal.muteIssued(4, 18);
    const mute = journal.muteIssued(4, 18);
    journal.muteAnswered(4, 18, true, mute, shows(true));
    journal.muteAnswered(4, 18, false, unmute, shows(true));
    expect(journal.mutes).toEqual([]);
    // Alone again afterwards.
    const later = journal.muteIssued(4, 18);
    journal.muteAnswered(4, 18, false, later, shows(false));
    expect(journal.mutes).toEqual([{ userId: 4, conversationId: 18, muted: false, acknowledged: false, ask: 3 }]);
  });
});
