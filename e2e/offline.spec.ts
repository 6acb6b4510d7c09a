import { expect, test } from "./fixtures.ts";
import type { TestWindow } from "./support/browser-scripts.ts";
import {
  expectBadgeSums,
  expectConversationUnread,
  expectMessageSeqs,
  expectTotalUnread,
  openConversation,
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
