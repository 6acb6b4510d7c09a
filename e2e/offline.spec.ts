import { expect, test } from "./fixtures.ts";
import type { TestWindow } from "./support/browser-scripts.ts";
import {
  conversationItem,
  expectBadgeSums,
  expectConversationUnread,
  expectMessageSeqs,
  expectMuted,
  expectTotalUnread,
  openConversation,
  openRowMenu,
  sendMessage,
  watchBadgeSums,
} from "./support/tally-page.ts";

test("a tab that was offline while others read shows the right counts once back, without a reload", async ({
  alice,
  bob,
  carol,
  signIn,
  env,
}) => {
  // Socket.IO waits up to its maximum reconnection delay before trying again.
  test.setTimeout(90_000);
  const direct = await alice.createConversation([bob.name]);
  const group = await alice.createConversation([bob.name, carol.name], "trio");

  // Bob's tab in context X (his own), and Bob again in context Y: another browser, its own network.
  const offlineTab = await bob.openTab(env.serverA);
  const elsewhere = await signIn(bob);
  const otherTab = await elsewhere.openTab(env.serverB);

  const alicePage = await alice.openTab(env.serverA);
  await expectTotalUnread(offlineTab, 0);
  await offlineTab.evaluate(() => ((window as TestWindow & { __sameDocument?: boolean }).__sameDocument = true));
  await watchBadgeSums(offlineTab);

  await bob.context.setOffline(true);
  await expect(offlineTab.getByTestId("connection-banner")).toHaveAttribute("data-state", "offline");

  await openConversation(alicePage, direct.id);
  for (const text of ["one", "two", "three"]) await sendMessage(alicePage, text);
  await openConversation(alicePage, group.id);
  for (const text of ["four", "five"]) await sendMessage(alicePage, text);

  // Bob reads the group elsewhere while the first tab hears nothing.
  await expectTotalUnread(otherTab, 5);
  await openConversation(otherTab, group.id);
  await expectMessageSeqs(otherTab, [1, 2]);
  await expectTotalUnread(otherTab, 3);
  await expect.poll(async () => (await bob.snapshot()).totalUnread).toBe(3);
  await expectTotalUnread(offlineTab, 0);

  await bob.context.setOffline(false);
  await expect(offlineTab.getByTestId("connection-banner")).toHaveCount(0, { timeout: 30_000 });
  await expectConversationUnread(offlineTab, direct.id, 3);
  await expectConversationUnread(offlineTab, group.id, 0);
  await expectTotalUnread(offlineTab, 3);
  // One step from the stale state to the right one: never a total the rows did not add up to.
  await expectBadgeSums(offlineTab, [0, 3]);
  expect(
    await offlineTab.evaluate(() => (window as TestWindow & { __sameDocument?: boolean }).__sameDocument),
    "the tab was not reloaded",
  ).toBe(true);
});

test("“Cannot reach the server” under the pane header goes once the connection is back", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  // Socket.IO waits up to its maximum reconnection delay before trying again.
  test.setTimeout(90_000);
  const group = await alice.createConversation([bob.name, carol.name], "trio");
  const direct = await alice.createConversation([bob.name]);
  const page = await alice.openTab(env.serverA, { open: group.id });
  page.on("dialog", (dialog) => void dialog.accept());
  const error = page.getByTestId("conversation-action-error");

  await alice.context.setOffline(true);
  await expect(page.getByTestId("connection-banner")).toHaveAttribute("data-state", "offline");
  // Leave (the store keeps its error) in the group, Block (the pane does) in the direct conversation.
  await page.getByTestId("leave-conversation").click();
  await expect(error).toHaveText("Cannot reach the server. Check your connection.");
  await openConversation(page, direct.id);
  await page.getByTestId("block-toggle").click();
  await expect(error).toHaveText("Cannot reach the server. Check your connection.");

  await alice.context.setOffline(false);
  await expect(page.getByTestId("connection-banner")).toHaveCount(0, { timeout: 30_000 });
  await expect(error).toHaveCount(0);
  await expect(page.getByTestId("block-toggle")).toHaveText("Block");
  await openConversation(page, group.id);
  await expect(page.getByTestId("conversation-title")).toHaveText("trio");
  await expect(error).toHaveCount(0);
});

test("muting or marking a row as unread offline is refused at once, in its menu and aloud", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  test.setTimeout(90_000);
  const group = await alice.createConversation([bob.name, carol.name], "trio");
  const bobPage = await bob.openTab(env.serverA, { open: group.id });
  await sendMessage(bobPage, "hello");
  const page = await alice.openTab(env.serverA);
  await expectConversationUnread(page, group.id, 1);
  await openConversation(page, group.id);
  await expectConversationUnread(page, group.id, 0);
  const announcer = page.getByTestId("announcer");

  await alice.context.setOffline(true);
  await expect(page.getByTestId("connection-banner")).toHaveAttribute("data-state", "offline");
  const menu = await openRowMenu(page, group.id);
  for (const item of [menu.getByTestId("row-mute"), menu.getByTestId("row-mark-unread")]) {
    await expect(item).toHaveAttribute("aria-disabled", "true");
    await expect(item).toHaveAccessibleDescription("Not while offline");
  }
  // Playwright clicks no aria-disabled element unless forced: a person's click is not refused that way.
  await menu.getByTestId("row-mute").click({ force: true });
  await expect(menu).toBeVisible();
  await page.keyboard.press("Escape");
  await expect(menu).toBeHidden();

  // The row's shortcuts skip the menu: the refusal is said where the person acted.
  await conversationItem(page, group.id).focus();
  await page.keyboard.press("Alt+Shift+M");
  await expect(announcer).toHaveText("“trio” not muted. You are offline; try again once the connection is back.");
  await page.keyboard.press("Alt+Shift+U");
  await expect(announcer).toHaveText(
    "“trio” not marked as unread. You are offline; try again once the connection is back.",
  );
  await expectMuted(page, group.id, false);
  // Nothing waits to be shown later, out of context, in the conversation's pane.
  await expect(page.getByTestId("conversation-action-error")).toHaveCount(0);

  await alice.context.setOffline(false);
  await expect(page.getByTestId("connection-banner")).toHaveCount(0, { timeout: 30_000 });
  const online = await openRowMenu(page, group.id);
  await expect(online.getByTestId("row-mute")).not.toHaveAttribute("aria-disabled", "true");
  await online.getByTestId("row-mute").click();
  await expectMuted(page, group.id, true);
  await expect(announcer).toHaveText("“trio” muted: only its mentions count in the badge.");
});
