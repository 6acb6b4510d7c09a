import { describe, expect, it } from "vitest";
import { firstUnseenSeq } from "./first-unseen";

const ME = 7;
const msgs = (...senders: number[]) => senders.map((senderId, i) => ({ seq: i + 1, senderId }));

describe("firstUnseenSeq", () => {
  it("is null when nothing is unseen", () => {
    expect(firstUnseenSeq(msgs(1, 2), 2, 0, ME)).toBeNull();
  });

  it("is latest - unseen + 1 when none of the user's own messages lie among the unseen", () => {
    expect(firstUnseenSeq(msgs(1, ME, 1, 1), 4, 2, ME)).toBe(3);
  });

  it("skips back over the user's own messages, which never count", () => {
    // Others' 2 and 3 unseen, then the user's reply at 4 and others' 5: 3 unseen, the first at 2.
    expect(firstUnseenSeq(msgs(1, 1, 1, ME, 1), 5, 3, ME)).toBe(2);
    expect(firstUnseenSeq(msgs(1, 1, 1, ME, ME), 5, 2, ME)).toBe(2);
  });

  it("skips back over messages their senders deleted, which never count either", () => {
    // Cursor at 10: 11 unread, 12 deleted, 13 unread: 2 unseen, the first at 11 (not at 12).
    const items = [10, 11, 12, 13].map((seq) => ({
      seq,
      senderId: 1,
      ...(seq === 12 ? { deleted: true as const } : {}),
    }));
    expect(firstUnseenSeq(items, 13, 2, ME)).toBe(11);
    expect(firstUnseenSeq(items.slice(0, 3), 12, 1, ME)).toBe(11);
  });

  it("counts what is not loaded as others' messages", () => {
    // Only 5 and 6 loaded (the user's own at 6): 3 unseen are 3, 4 and 5.
    expect(
      firstUnseenSeq(
        [
          { seq: 5, senderId: 1 },
          { seq: 6, senderId: ME },
        ],
        6,
        3,
        ME,
      ),
    ).toBe(3);
    // Nothing loaded yet.
    expect(firstUnseenSeq([], 10, 4, ME)).toBe(7);
    // A gap after a push: 8 and 9 missing between 7 and 10.
    expect(
      firstUnseenSeq(
        [
          { seq: 7, senderId: 1 },
          { seq: 10, senderId: ME },
        ],
        10,
        2,
        ME,
      ),
    ).toBe(8);
  });
});
