import { expect, test } from "./fixtures.ts";
import { conversationItem, expectUnread, sendMessage } from "./support/tally-page.ts";

test("a message from another user raises the conversation badge, the app badge and the tab title", async ({
  alice,
  bob,
  env,
}) => {
  const conversation = await bob.createConversation([alice.name]);

  const alicePage = await alice.openTab(env.serverA);
  await expect(conversationItem(alicePage, conversation.id)).toBeVisible();
  await expectUnread(alicePage, conversation.id, 0);

  const bobPage = await bob.openTab(env.serverA, { open: conversation.id });

  expect(await sendMessage(bobPage, "hello alice")).toBe(1);
  await expectUnread(alicePage, conversation.id, 1);

  expect(await sendMessage(bobPage, "are you there")).toBe(2);
  await expectUnread(alicePage, conversation.id, 2);

  // The sender's own messages are never unread for them; their row's preview says "You". The other's row says the
  // message alone: its title names the sender.
  await expectUnread(bobPage, conversation.id, 0);
  await expect(conversationItem(bobPage, conversation.id)).toContainText("You: are you there");
  await expect(conversationItem(alicePage, conversation.id).locator(".conversation-preview")).toHaveText(
    "are you there",
  );
  const [aliceState, bobState] = await Promise.all([alice.snapshot(), bob.snapshot()]);
  expect(aliceState.totalUnread).toBe(2);
  expect(bobState.totalUnread).toBe(0);

  // A web address is a link that opens in a new tab and gets nothing of this page; the sentence's "." stays text.
  await sendMessage(bobPage, "notes at https://example.com/notes.");
  const link = bobPage.getByTestId("message-link");
  await expect(link).toHaveText("https://example.com/notes");
  await expect(link).toHaveAttribute("href", "https://example.com/notes");
  await expect(link).toHaveAttribute("target", "_blank");
  await expect(link).toHaveAttribute("rel", "noopener noreferrer nofollow");
});
