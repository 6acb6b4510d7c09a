import { describe, expect, it } from "vitest";
import { initialUnreadState } from "../../../components/store/unread.ts";
import { describeTransition } from "./browser-tab.ts";

const state = (over: Partial<Parameters<typeof describeTransition>[0]> = {}) => ({
  epoch: "e1",
  version: 7,
  totalUnread: 3,
  totalMentions: 1,
  unreadCounts: { 4: 2, 9: 1 } as Record<number, number>,
  unreadDetails: {
    4: { mentionCount: 1, muted: false, markedUnread: false, markVersion: 0 },
    9: { mentionCount: 0, muted: false, markedUnread: false, markVersion: 0 },
  },
  syncing: false,
  ...over,
});

describe("describeTransition", () => {
  it("names the version, the totals, every row after and which changed, and the rows that went", () => {
    const prev = state();
    const next = state({
      version: 8,
      totalUnread: 4,
      unreadCounts: { 4: 2, 11: 1 },
      unreadDetails: {
        4: { mentionCount: 1, muted: true, markedUnread: false, markVersion: 0 },
      },
    });
    expect(describeTransition(prev, next)).toBe("v7 → v8, totals 3/1 → 4/1; rows #4 2/1 muted*, #11 1*; gone #9");
  });

  it("names a new epoch and a sync in progress, and a tab without rows", () => {
    const prev = { ...initialUnreadState }; // a page that has not synced yet
    expect(describeTransition(prev, state({ syncing: true }))).toBe(
      "epoch none → e1, v0 → v7 (syncing), totals 0/0 → 3/1; rows #4 2/1*, #9 1*",
    );
    expect(describeTransition(prev, prev)).toBe("v0 → v0, totals 0/0 → 0/0; rows none");
  });
});
