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
  // By keyboard: the toggle keeps the focus while the block is under way and after (Tab goes on from it).
  await front.getByTestId("block-toggle").focus();
  await front.keyboard.press("Enter");
  await expect(front.getByTestId("block-toggle")).toHaveText("Unblock");
  await expect(front.getByTestId("block-toggle")).toBeFocused();
  await expect(front.getByTestId("blocked-note")).toContainText(
    `You blocked ${bob.name}. Neither of you can write here until you unblock them.`,
  );
  await expect(front.getByTestId("message-input")).toHaveCount(0);
  // Every tab of Alice's heard it: the list under the conversations names Bob.
  const blockedList = behind.getByTestId("blocked-people").locator("summary");
  await expect(blockedList).toHaveText("Blocked people (1)");

  const input = bobPage.getByTestId("message-input");
  await input.fill("are you there?");
  await input.press("Enter");
  await expect(bobPage.getByTestId("pending-error")).toHaveText("You cannot write in this conversation.");
  // Refused, so stored nowhere: the conversation still ends at Bob's first message, and nothing counts for Alice.
  const snapshot = await alice.snapshot();
  expect(snapshot.conversations.find((c) => c.id === direct.id)?.lastSeq).toBe(1);
  await expectTotalUnread(behind, 0);

  // Unblocked from the other tab, by the list under the conversations: the composer is back in the first.
  await blockedList.click();
  await behind.getByRole("button", { name: `Unblock ${bob.name}` }).click();
  await expect(blockedList).toHaveText("Blocked people");
  await expect(front.getByTestId("message-input")).toBeVisible();
  await expect(front.getByTestId("block-toggle")).toHaveText("Block");
  await sendMessage(bobPage, "back again");
  await expect(messages(front).filter({ hasText: "back again" })).toHaveAttribute("data-seq", "2");
});

test("someone met only in a group can be blocked by name, and can no longer put the blocker in a new group", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  await carol.createConversation([alice.name, bob.name], "spam");
  const page = await alice.openTab(env.serverA);
  const summary = page.getByTestId("blocked-people").locator("summary");
  await summary.click();
  // Asked as the Block button in a direct conversation asks; each answer, in order, to the next question.
  const asked: string[] = [];
  const answers = [true, false, true];
  page.on("dialog", (dialog) => {
    asked.push(dialog.message());
    void (answers.shift() ? dialog.accept() : dialog.dismiss());
  });
  await page.getByTestId("block-name").fill("nobody-by-that-name");
  await page.getByTestId("block-name").press("Enter");
  await expect(page.getByTestId("block-error")).toHaveText("No user called 'nobody-by-that-name'.");

  // Cancelled: nobody blocked, the name stays to be corrected or cleared.
  await page.getByTestId("block-name").fill(carol.name.toUpperCase());
  await page.getByTestId("block-name").press("Enter");
  expect(asked).toHaveLength(2);
  expect(asked[1]).toMatch(new RegExp(`^Block ${carol.name.toUpperCase()}\\? Neither of you will be able to write`));
  await expect(summary).toHaveText("Blocked people");
  await expect(page.getByTestId("block-name")).toHaveValue(carol.name.toUpperCase());
  await expect(page.getByTestId("announcer")).toHaveText("");

  await page.getByTestId("block-name").press("Enter");
  await expect(page.getByRole("button", { name: `Unblock ${carol.name}` })).toBeVisible();
  await expect(page.getByTestId("block-name")).toHaveValue("");
  await expect(page.getByTestId("announcer")).toHaveText(`Blocked ${carol.name}.`);
  expect(asked).toHaveLength(3);

  // Carol's New form is told what it would be told of a name nobody has.
  const carolPage = await carol.openTab(env.serverB);
  await carolPage.getByTestId("new-conversation").click();
  await carolPage.getByTestId("member-input").fill(`${alice.name} ${bob.name}`);
  await carolPage.getByTestId("title-input").fill("more spam");
  await carolPage.getByTestId("create-conversation").click();
  await expect(carolPage.getByTestId("create-error")).toHaveText(`No user called '${alice.name}'.`);
});
