import type { Page } from "@playwright/test";
import { expect, test, type TestUser } from "./fixtures.ts";
import {
  conversationItem,
  expectMentions,
  expectMuted,
  expectTotalUnread,
  expectUnread,
  hide,
  lookAt,
  openConversation,
  openRowMenu,
  sendMessage,
} from "./support/tally-page.ts";

/*
 * Mute, mentions and mark as unread across two tabs of one user (docs/consistency.md, "Mute, mentions and mark as
 * unread"): the app badge is Σ unread over unmuted conversations + Σ mentions over muted ones, in every tab, and
 * the fixtures check that rule against the rows after every DOM update of every page.
 */

/** Two tabs of `user`'s, on the two server instances: the first in front, the second behind it. */
async function twoTabs(user: TestUser, front: string, behind: string): Promise<[Page, Page]> {
  const first = await user.openTab(front);
  const second = await user.openTab(behind, { window: "hidden" });
  await lookAt(first);
  return [first, second];
}

test("a muted group keeps its count greyed out of the badge in both tabs; a mention in it raises the badge by one", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await bob.createConversation([alice.name, carol.name], "noisy");
  const direct = await bob.createConversation([alice.name]);
  const [front, behind] = await twoTabs(alice, env.serverA, env.serverB);
  const bobPage = await bob.openTab(env.serverA, { open: group.id });
  await sendMessage(bobPage, "lunch?");
  await sendMessage(bobPage, "anyone?");
  await openConversation(bobPage, direct.id);
  await sendMessage(bobPage, "just you");
  for (const tab of [front, behind]) {
    await expectUnread(tab, group.id, 2, 3);
    await expectMuted(tab, group.id, false);
  }

  const menu = await openRowMenu(front, group.id);
  await expect(menu.getByTestId("row-mute")).toHaveText(/^Mute/);
  await expect(menu.getByTestId("row-mute")).toHaveAttribute("aria-keyshortcuts", "Alt+Shift+M");
  await menu.getByTestId("row-mute").click();
  await expect(menu).toBeHidden();

  for (const tab of [front, behind]) {
    await expectMuted(tab, group.id, true);
    // The count stays on the row; only the direct conversation's message is in the badge.
    await expectUnread(tab, group.id, 2, 1);
    await expectMentions(tab, group.id, 0);
  }
  expect(await alice.snapshot()).toMatchObject({ totalUnread: 1, totalMentions: 0 });

  await openConversation(bobPage, group.id);
  await sendMessage(bobPage, `@${alice.name} are you in?`);
  for (const tab of [front, behind]) {
    await expectUnread(tab, group.id, 3, 2);
    await expectMentions(tab, group.id, 1);
    await expectMuted(tab, group.id, true);
  }
  expect(await alice.snapshot(env.serverB)).toMatchObject({ totalUnread: 2, totalMentions: 1 });

  // Unmute with the keyboard, on the focused row: the whole count is back in the badge, in both tabs.
  await conversationItem(front, group.id).focus();
  await front.keyboard.press("Alt+Shift+M");
  for (const tab of [front, behind]) {
    await expectMuted(tab, group.id, false);
    await expectUnread(tab, group.id, 3, 4);
    await expectMentions(tab, group.id, 1);
  }
});

test("mark as unread shows 1 in both tabs; opening it in the other tab shows 0 in both", async ({
  alice,
  bob,
  env,
}) => {
  const conversation = await bob.createConversation([alice.name]);
  const bobPage = await bob.openTab(env.serverA, { open: conversation.id });
  await sendMessage(bobPage, "the plan is in the doc");
  const [front, behind] = await twoTabs(alice, env.serverA, env.serverB);
  // Read in the front tab, which keeps it open: nothing unread anywhere.
  await openConversation(front, conversation.id);
  for (const tab of [front, behind]) await expectUnread(tab, conversation.id, 0);

  // Mark it from its row menu, with the keyboard only.
  const menu = await openRowMenu(front, conversation.id, "keyboard");
  await expect(menu.getByTestId("row-mute")).toBeFocused();
  await front.keyboard.press("ArrowDown");
  await expect(menu.getByTestId("row-mark-unread")).toBeFocused();
  await expect(menu.getByTestId("row-mark-unread")).toHaveAttribute("aria-keyshortcuts", "Alt+Shift+U");
  await front.keyboard.press("Enter");
  await expect(menu).toBeHidden();
  for (const tab of [front, behind]) await expectUnread(tab, conversation.id, 1);
  // Still open in the front tab, which marked it: the mark holds there until it is opened again.
  await expectUnread(front, conversation.id, 1);
  expect((await alice.snapshot()).conversations.find((c) => c.id === conversation.id)).toMatchObject({
    unreadCount: 1,
    markedUnread: true,
  });

  // The other tab comes to the front and opens it: read to its end, so the mark is gone everywhere.
  await hide(front);
  await lookAt(behind);
  await openConversation(behind, conversation.id);
  for (const tab of [front, behind]) await expectUnread(tab, conversation.id, 0);
  expect(await alice.snapshot(env.serverB)).toMatchObject({ totalUnread: 0 });
  expect((await alice.snapshot()).conversations.find((c) => c.id === conversation.id)).toMatchObject({
    markedUnread: false,
  });
});

test("Alt+Shift+U on the focused row marks it unread in both tabs", async ({ alice, bob, env }) => {
  const conversation = await bob.createConversation([alice.name]);
  const bobPage = await bob.openTab(env.serverA, { open: conversation.id });
  await sendMessage(bobPage, "are we still on?");
  const [front, behind] = await twoTabs(alice, env.serverA, env.serverB);
  // Read first: a row that shows something unread is not marked (e2e/row-menu-ui.spec.ts).
  await openConversation(front, conversation.id);
  for (const tab of [front, behind]) await expectUnread(tab, conversation.id, 0);
  await conversationItem(front, conversation.id).focus();
  await front.keyboard.press("Alt+Shift+U");
  for (const tab of [front, behind]) await expectUnread(tab, conversation.id, 1);
  await expectTotalUnread(front, 1);
});
