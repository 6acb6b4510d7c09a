import { expect, test } from "./fixtures.ts";
import { appBadge, conversationItem, expectTotalUnread, expectUnread, sendMessage } from "./support/tally-page.ts";
import { CLIENT_LIST_PAGE } from "../server/contracts/inputs.ts";

test("a long list comes a page at a time: older conversations' unread waits at its end, a click or a scroll brings them", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  // The oldest activity is a group with two messages for alice; then more groups than a page, each newer.
  const old = await bob.createConversation([alice.name, carol.name], "the old one");
  const bobPage = await bob.openTab(env.serverA, { open: old.id });
  await sendMessage(bobPage, "first");
  await sendMessage(bobPage, "second");
  const newer = [];
  for (let i = 0; i < CLIENT_LIST_PAGE + 2; i++) {
    newer.push(await bob.createConversation([alice.name, carol.name], `newer ${i}`));
  }

  const page = await alice.openTab(env.serverA);
  const rows = page.getByTestId("conversation-item");
  await expect(rows).toHaveCount(CLIENT_LIST_PAGE);
  // The badge counts the old group's two; the list's end says where they are.
  await expectTotalUnread(page, 2);
  const end = page.getByTestId("older-unread");
  await expect(end).toHaveText(/2 unread in older conversations/);
  await expect(conversationItem(page, old.id)).toHaveCount(0);

  // A click on the end's count loads the next page and brings the row that counts into view.
  await end.click();
  await expect(rows).toHaveCount(CLIENT_LIST_PAGE + 3);
  await expectUnread(page, old.id, 2);
  await expect(conversationItem(page, old.id)).toBeInViewport();
  await expect(end).toHaveCount(0);
  await expect(page.getByTestId("older-button")).toHaveCount(0);
  await expect(rows.last()).toHaveAttribute("data-conversation-id", String(old.id));

  // In another tab, scrolling to the list's end loads the rest by itself.
  const other = await alice.openTab(env.serverA);
  const otherRows = other.getByTestId("conversation-item");
  await expect(otherRows).toHaveCount(CLIENT_LIST_PAGE);
  await other.getByTestId("older-button").scrollIntoViewIfNeeded();
  await expect(otherRows).toHaveCount(CLIENT_LIST_PAGE + 3);
  await expectUnread(other, old.id, 2);

  // A new message there brings it to the top, counted once.
  await sendMessage(bobPage, "third");
  await expectUnread(page, old.id, 3);
  await expect(rows.first()).toHaveAttribute("data-conversation-id", String(old.id));
  await expect(appBadge(page)).toHaveAttribute("data-count", "3");
  expect((await alice.snapshot()).totalUnread).toBe(3);
});
