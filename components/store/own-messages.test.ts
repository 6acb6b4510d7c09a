import { describe, expect, it } from "vitest";
import { othersUnseenBelow, shownUnread } from "./runtime";
import type { ChatState } from "./types";

const ME = 7;
const BOB = 8;

/** The parts of the store these two read: conversation 1, its loaded messages (seq → sender), what was seen. */
function state(senders: number[], opts: { count: number; seen?: number; readRequested?: number }): ChatState {
  return {
    user: { id: ME, name: "me" },
    unreadCounts: { 1: opts.count },
    unreadDetails: {},
    seenSeq: opts.seen === undefined ? {} : { 1: opts.seen },
    readRequested: opts.readRequested === undefined ? {} : { 1: opts.readRequested },
    conversations: {},
    messages: { 1: { items: senders.map((senderId, i) => ({ seq: i + 1, senderId })) } },
  } as unknown as ChatState;
}

describe("the user's own messages in what a tab shows", () => {
  it("a badge counting down as the person scrolls leaves their own messages out", () => {
    // Seen up to 3; 4 and 5 are bob's, 6 is mine: 2 left, not 3, even before the server's count catches up.
    expect(shownUnread(state([BOB, BOB, BOB, BOB, BOB, ME], { count: 3, seen: 3 }), 1)).toBe(2);
    // Seen up to 5: only my own message is above, nothing is left.
    expect(shownUnread(state([BOB, BOB, BOB, BOB, BOB, ME], { count: 3, seen: 5 }), 1)).toBe(0);
    // The server's count wins when lower.
    expect(shownUnread(state([BOB, BOB, BOB, BOB, BOB, ME], { count: 1, seen: 3 }), 1)).toBe(1);
  });

  it("others' messages below what was seen or read keep a send from scrolling past them", () => {
    expect(othersUnseenBelow(state([BOB, BOB, ME], { count: 1, seen: 1 }), 1)).toBe(true);
    expect(othersUnseenBelow(state([BOB, BOB, ME], { count: 0, seen: 2 }), 1)).toBe(false);
    expect(othersUnseenBelow(state([BOB, BOB, ME], { count: 0, readRequested: 2 }), 1)).toBe(false);
    // Only my own messages below: nothing to skip.
    expect(othersUnseenBelow(state([BOB, ME, ME], { count: 0, seen: 1 }), 1)).toBe(false);
  });
});
