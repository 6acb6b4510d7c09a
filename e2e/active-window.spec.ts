import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures.ts";
import type { BadgeSample } from "./support/browser-scripts.ts";
import {
  badgeLog,
  blur,
  clearBadgeLog,
  expectMessageSeqs,
  expectTotalUnread,
  expectUnread,
  hide,
  lookAt,
  sendMessage,
} from "./support/tally-page.ts";

/** Every value the app badge, the given conversation's row and the title took since the log was cleared. */
async function shownValues(
  page: Page,
  conversationId: number,
): Promise<Record<BadgeSample["kind"], (string | null)[]>> {
  const log = await badgeLog(page);
  const values = (kind: BadgeSample["kind"]) =>
    log
      .filter((s) => s.kind === kind && (kind !== "conversation" || s.conversationId === String(conversationId)))
      .map((s) => s.value);
  return { app: values("app"), conversation: values("conversation"), title: values("title") };
}

test("messages in the open conversation count only while its tab is hidden or unfocused", async ({
  alice,
  bob,
  env,
}) => {
  const conversation = await bob.createConversation([alice.name]);

  const alicePage = await alice.openTab(env.serverA, { window: "looking", open: conversation.id });
  const bobPage = await bob.openTab(env.serverB, { open: conversation.id });
  await expectTotalUnread(alicePage, 0);

  // Looking: not even for one frame may a badge or the title show a count.
  await clearBadgeLog(alicePage);
  for (const text of ["one", "two", "three"]) await sendMessage(bobPage, text);
  await expectMessageSeqs(alicePage, [1, 2, 3]);
  const lastReadSeq = async () =>
    (await alice.snapshot()).conversations.find((c) => c.id === conversation.id)?.lastReadSeq;
  await expect.poll(lastReadSeq).toBe(3);
  // A late unread push would land within this pause; the recorder catches it even if it is undone at once.
  await alicePage.waitForTimeout(1_000);
  await expectTotalUnread(alicePage, 0);
  const whileLooking = await shownValues(alicePage, conversation.id);
  expect(
    whileLooking.app.filter((v) => v !== "0"),
    "app badge values while looking",
  ).toEqual([]);
  expect(
    whileLooking.conversation.filter((v) => v !== "0"),
    "row badge values while looking",
  ).toEqual([]);
  expect(
    whileLooking.title.filter((v) => v !== "Tally"),
    "titles while looking",
  ).toEqual([]);

  // Another tab in front: the same conversation, still open, now counts.
  await hide(alicePage);
  await clearBadgeLog(alicePage);
  await sendMessage(bobPage, "four");
  await sendMessage(bobPage, "five");
  await expectUnread(alicePage, conversation.id, 2);
  await expectMessageSeqs(alicePage, [1, 2, 3, 4, 5]);
  // The page may show a count before the server's snapshot is asked; both must reach it.
  await expect.poll(async () => (await alice.snapshot()).totalUnread).toBe(2);
  // The recorder works: it saw the count rise.
  expect((await shownValues(alicePage, conversation.id)).app).toEqual(expect.arrayContaining(["1", "2"]));

  // Back in front: read up to the latest message.
  await lookAt(alicePage);
  await expectUnread(alicePage, conversation.id, 0);
  await expect.poll(lastReadSeq).toBe(5);

  // Visible but another window has the focus: counts too, until the focus comes back.
  await blur(alicePage);
  await sendMessage(bobPage, "six");
  await expectUnread(alicePage, conversation.id, 1);
  await lookAt(alicePage);
  await expectUnread(alicePage, conversation.id, 0);
  await expect.poll(async () => (await alice.snapshot()).totalUnread).toBe(0);
});
