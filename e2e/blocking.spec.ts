import { expect, test } from "./fixtures.ts";
import { expectTotalUnread, messages, sendMessage } from "./support/tally-page.ts";

/*
 * Blocking (docs/protocol.md, "Blocking"): the blocker's tabs all know, the composer gives way to a note, the
 * blocked person's message is refused with a sentence and stored nowhere, and unblocking from the list under the
 * conversations (another tab) brings the composer back.
 */
test("blocking someone stops their messages in the direct conversation, in every tab, until unblocked", async ({
  alice,
  bob,
  env,
}) => {
  const direct = await bob.createConversation([alice.name]);
  const front = await alice.openTab(env.serverA, { open: direct.id });
  const behind = await alice.openTab(env.serverB, { window: "hidden" });
  const bobPage = await bob.openTab(env.serverB, { open: direct.id });
  await sendMessage(bobPage, "hi there");
  await expect(messages(front).filter({ hasText: "hi there" })).toBeVisible();

  front.once("dialog", (dialog) => {
    expect(dialog.message()).toMatch(new RegExp(`^Block ${bob.name}\\? Neither of you will be able to write`));
    void dialog.accept();
  });
  await front.getByTestId("block-toggle").click();
  await expect(front.getByTestId("block-toggle")).toHaveText("Unblock");
  await expect(front.getByTestId("blocked-note")).toContainText(
    `You blocked ${bob.name}. Neither of you can write here until you unblock them.`,
  );
  await expect(front.getByTestId("message-input")).toHaveCount(0);
  // Every tab of Alice's heard it: the list under the conversations names Bob.
  await expect(behind.getByTestId("blocked-people")).toContainText("Blocked (1)");

  const input = bobPage.getByTestId("message-input");
  await input.fill("are you there?");
  await input.press("Enter");
  await expect(bobPage.getByTestId("pending-error")).toHaveText("You cannot write in this conversation.");
  // Refused, so stored nowhere: the conversation still ends at Bob's first message, and nothing counts for Alice.
  const snapshot = await alice.snapshot();
  expect(snapshot.conversations.find((c) => c.id === direct.id)?.lastSeq).toBe(1);
  await expectTotalUnread(behind, 0);

  // Unblocked from the other tab, by the list under the conversations: the composer is back in the first.
  await behind.getByTestId("blocked-people").locator("summary").click();
  await behind.getByRole("button", { name: `Unblock ${bob.name}` }).click();
  await expect(behind.getByTestId("blocked-people")).toHaveCount(0);
  await expect(front.getByTestId("message-input")).toBeVisible();
  await expect(front.getByTestId("block-toggle")).toHaveText("Block");
  await sendMessage(bobPage, "back again");
  await expect(messages(front).filter({ hasText: "back again" })).toHaveAttribute("data-seq", "2");
});
