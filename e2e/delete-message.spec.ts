import { expect, test } from "./fixtures.ts";
import {
  conversationItem,
  expectBadgeSums,
  expectMentions,
  expectUnread,
  messages,
  openConversation,
  sendMessage,
  watchBadgeSums,
} from "./support/tally-page.ts";

test("a sender deletes a message: it turns deleted in every tab, and leaves the count and mention of whoever had not seen it", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await alice.createConversation([bob.name, carol.name], "slip");
  const alicePage = await alice.openTab(env.serverA, { open: group.id });
  await sendMessage(alicePage, "one");
  const oops = await sendMessage(alicePage, `@${bob.name} meant for someone else`);
  await sendMessage(alicePage, "three");
  const aliceOther = await alice.openTab(env.serverB, { open: group.id });

  // Bob, on the other instance, has the group open in a window without focus: nothing of it is read.
  const bobPage = await bob.openTab(env.serverB, { window: "blurred" });
  await openConversation(bobPage, group.id);
  await expectUnread(bobPage, group.id, 3);
  await expectMentions(bobPage, group.id, 1);
  await watchBadgeSums(bobPage);

  // Only her own messages offer "Delete"; it is asked first.
  await expect(bobPage.getByTestId("delete-message")).toHaveCount(0);
  const mine = messages(alicePage).filter({ hasText: "meant for someone else" });
  await mine.hover();
  let asked = "";
  alicePage.once("dialog", (dialog) => {
    asked = dialog.message();
    void dialog.accept();
  });
  await mine.getByTestId("delete-message").click();
  expect(asked).toBe("Delete this message for everyone? Nobody will see it again.");
  await expect(alicePage.getByTestId("announcer")).toHaveText("Message deleted.");
  await expect(alicePage.locator(".message-scroller")).toBeFocused();
  const deletedOn = (page: typeof alicePage) => page.locator(`[data-testid=message][data-seq="${oops}"]`);
  await expect(deletedOn(alicePage).getByTestId("message-deleted")).toHaveText("You deleted this message.");
  await expect(deletedOn(alicePage).getByTestId("delete-message")).toHaveCount(0);
  await expect(deletedOn(aliceOther).getByTestId("message-deleted")).toHaveText("You deleted this message.");

  // Bob: the text is gone, and so are its count and its mention, in one step with the app badge.
  await expect(deletedOn(bobPage).getByTestId("message-deleted")).toHaveText("This message was deleted.");
  await expect(messages(bobPage).filter({ hasText: "meant for someone else" })).toHaveCount(0);
  await expectUnread(bobPage, group.id, 2);
  await expectMentions(bobPage, group.id, 0);
  await expectBadgeSums(bobPage, [3, 2]);
  expect(await bob.snapshot()).toMatchObject({ totalUnread: 2, totalMentions: 0 });

  // The newest message deleted: the row says so instead of its text, also after a reload.
  const last = messages(alicePage).filter({ hasText: "three" });
  await last.hover();
  alicePage.once("dialog", (dialog) => void dialog.accept());
  await last.getByTestId("delete-message").click();
  await expectUnread(bobPage, group.id, 1);
  const preview = conversationItem(bobPage, group.id).getByTestId("preview-deleted");
  await expect(preview).toHaveText(`${alice.name} deleted a message`);
  const carolPage = await carol.openTab(env.serverA);
  await expect(conversationItem(carolPage, group.id).getByTestId("preview-deleted")).toHaveText(
    `${alice.name} deleted a message`,
  );
  await expectUnread(carolPage, group.id, 1);
  await bobPage.reload();
  await expect(conversationItem(bobPage, group.id).getByTestId("preview-deleted")).toBeVisible();
  await openConversation(bobPage, group.id);
  await expect(bobPage.getByTestId("message-deleted")).toHaveCount(2);
});
