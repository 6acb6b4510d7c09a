import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures.ts";
import {
  blur,
  conversationItem,
  expectBadgeSums,
  expectConversationUnread,
  expectTotalUnread,
  expectUnread,
  openConversation,
  sendMessage,
  watchBadgeSums,
} from "./support/tally-page.ts";

/** Clicks a pane action and accepts its window.confirm. */
async function confirmAction(page: Page, testId: "leave-conversation" | "delete-conversation"): Promise<void> {
  page.once("dialog", (dialog) => void dialog.accept());
  await page.getByTestId(testId).click();
}

test("leaving a group with unread messages drops its row and its count together in every tab", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await alice.createConversation([bob.name, carol.name], "trio");
  const direct = await alice.createConversation([bob.name]);

  // Two tabs of Bob's on two instances: one on screen but unfocused (so opening the group does not read it),
  // the other behind it.
  const front = await bob.openTab(env.serverA);
  const behind = await bob.openTab(env.serverB, { window: "hidden" });
  await blur(front);

  const alicePage = await alice.openTab(env.serverA, { open: group.id });
  await sendMessage(alicePage, "one");
  await sendMessage(alicePage, "two");
  await openConversation(alicePage, direct.id);
  await sendMessage(alicePage, "three");
  for (const tab of [front, behind]) {
    await expectConversationUnread(tab, group.id, 2);
    await expectConversationUnread(tab, direct.id, 1);
    await expectTotalUnread(tab, 3);
  }

  await openConversation(front, group.id);
  await expectConversationUnread(front, group.id, 2);
  // Open behind too (hidden, it reads nothing): it is told where the group went.
  await openConversation(behind, group.id);
  await expectConversationUnread(behind, group.id, 2);
  for (const tab of [front, behind]) await watchBadgeSums(tab);

  // Only the group's creator may delete it: Bob is not offered "Delete", only "Leave".
  await expect(front.getByTestId("delete-conversation")).toHaveCount(0);
  await expect(front.getByTestId("leave-conversation")).toBeVisible();
  await expectTotalUnread(front, 3);

  await confirmAction(front, "leave-conversation");
  for (const tab of [front, behind]) {
    await expect(conversationItem(tab, group.id)).toHaveCount(0);
    await expectUnread(tab, direct.id, 1);
    await expectBadgeSums(tab, [3, 1]);
  }
  await expect(front.getByTestId("empty-state")).toBeVisible();
  // The row and the pane just went: a screen reader is told why, as for mute and mark.
  await expect(front.getByTestId("announcer")).toHaveText("Left “trio”.");
  await expect(behind.getByTestId("announcer")).toHaveText("");
  await expect(behind.getByTestId("gone-notice")).toContainText("You left “trio” in another tab or on another device.");
  await expect(front.getByTestId("gone-notice")).toHaveCount(0);

  const snapshot = await bob.snapshot();
  expect(snapshot.conversations.map((c) => c.id)).toEqual([direct.id]);
  expect(snapshot.totalUnread).toBe(1);
  // The group goes on without him.
  const carolsGroup = (await carol.snapshot()).conversations.find((c) => c.id === group.id);
  expect(carolsGroup?.members.map((m) => m.name).sort()).toEqual([alice.name, carol.name].sort());
});

test("deleting a direct conversation removes it for both members and their counts with it", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await carol.createConversation([alice.name, bob.name], "trio");
  const direct = await bob.createConversation([alice.name]);

  const alicePage = await alice.openTab(env.serverA, { window: "blurred" });
  const bobPage = await bob.openTab(env.serverB, { window: "looking" });
  const carolPage = await carol.openTab(env.serverA, { open: group.id });
  await sendMessage(carolPage, "hello both");
  await openConversation(bobPage, direct.id);
  await sendMessage(bobPage, "first");
  await sendMessage(bobPage, "second");

  // Opened on screen but unfocused: its count stays until Alice deletes it.
  await openConversation(alicePage, direct.id);
  await expectUnread(alicePage, direct.id, 2, 3);
  await expectUnread(bobPage, group.id, 1);
  for (const page of [alicePage, bobPage]) await watchBadgeSums(page);

  await confirmAction(alicePage, "delete-conversation");
  for (const page of [alicePage, bobPage]) {
    await expect(conversationItem(page, direct.id)).toHaveCount(0);
    await expect(page.getByTestId("empty-state")).toBeVisible();
    await expectUnread(page, group.id, 1);
  }
  await expectBadgeSums(alicePage, [3, 1]);
  await expectBadgeSums(bobPage, [1]);
  await expect(alicePage.getByTestId("announcer")).toHaveText(`Deleted your conversation with ${bob.name}.`);
  // Bob had it open: his pane says why it emptied; Alice, who deleted it, needs no telling.
  await expect(bobPage.getByTestId("gone-notice")).toContainText(`${alice.name} deleted your conversation.`);
  await bobPage.getByTestId("gone-notice-dismiss").click();
  await expect(bobPage.getByTestId("gone-notice")).toHaveCount(0);
  await expect(alicePage.getByTestId("gone-notice")).toHaveCount(0);

  for (const user of [alice, bob]) {
    const snapshot = await user.snapshot();
    expect(snapshot.conversations.map((c) => c.id)).toEqual([group.id]);
    expect(snapshot.totalUnread).toBe(1);
  }
  const history = await alice.context.request.get(`${env.serverA}/api/conversations/${direct.id}/messages`, {
    headers: { authorization: `Bearer ${alice.token}` },
  });
  expect(history.status()).toBe(403);
});

test("an untitled group down to two members reads as a group in its row, header, delete question and gone notice", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await bob.createConversation([alice.name, carol.name]);
  const alicePage = await alice.openTab(env.serverA, { open: group.id });
  const title = alicePage.getByTestId("conversation-title");
  const row = conversationItem(alicePage, group.id).locator(".conversation-title");
  await expect(title).toHaveText([bob.name, carol.name].sort().join(", "));

  const carolPage = await carol.openTab(env.serverB, { open: group.id });
  await confirmAction(carolPage, "leave-conversation");
  // The direct conversation with bob would be titled "bob": this one is not.
  await expect(title).toHaveText(`Group with ${bob.name}`);
  await expect(row).toHaveText(`Group with ${bob.name}`);

  const bobPage = await bob.openTab(env.serverB, { open: group.id });
  await expect(bobPage.getByTestId("conversation-title")).toHaveText(`Group with ${alice.name}`);
  let question = "";
  bobPage.once("dialog", (dialog) => {
    question = dialog.message();
    void dialog.accept();
  });
  await bobPage.getByTestId("delete-conversation").click();
  await expect(alicePage.getByTestId("gone-notice")).toContainText(`${bob.name} deleted “Group with ${bob.name}”.`);
  expect(question).toBe(`Delete “Group with ${alice.name}” and its messages for every member?`);
});

test("a member who leaves a group shows as 'name left' in its history, live and after a reload", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await alice.createConversation([bob.name, carol.name], "Leavers");
  const alicePage = await alice.openTab(env.serverA, { open: group.id });
  await sendMessage(alicePage, "before");
  const bobPage = await bob.openTab(env.serverB, { open: group.id });
  await confirmAction(bobPage, "leave-conversation");
  await expect(conversationItem(bobPage, group.id)).toHaveCount(0);

  // Alice's open group says so at once, between the message before and the one after.
  const line = alicePage.getByTestId("member-left");
  await expect(line).toHaveText(new RegExp(`^${bob.name} left \\d`));
  // And a screen reader hears it: the line is not a message, so the arrivals region would not say it.
  await expect(alicePage.getByTestId("announcer")).toHaveText(`${bob.name} left the group.`);
  await expect(alicePage.getByTestId("conversation-members")).toHaveText(/^2 members: /);
  await sendMessage(alicePage, "after");
  const order = () =>
    alicePage
      .locator('[data-testid="message"], [data-testid="member-left"]')
      .evaluateAll((items) => items.map((e) => (e.matches('[data-testid="member-left"]') ? "left" : e.textContent)));
  await expect
    .poll(async () =>
      (await order()).map((t) => (t?.includes("before") ? "before" : t?.includes("after") ? "after" : t)),
    )
    .toEqual(["before", "left", "after"]);

  // The server's record, for a reload and for a member who opens the group later.
  await alicePage.reload();
  await expect(alicePage.getByTestId("member-left")).toHaveText(new RegExp(`^${bob.name} left`));
  const carolPage = await carol.openTab(env.serverA, { open: group.id });
  await expect(carolPage.getByTestId("member-left")).toHaveAttribute("data-user-id", String(bob.id));
  await expect(carolPage.getByTestId("member-left")).toContainText(`${bob.name} left`);
  // A line that came with the history is read with it, not said as news (the announcer fills a frame later; the
  // line shows once the list is positioned, when the departures are first taken in).
  await expect(carolPage.getByTestId("member-left")).toBeVisible();
  await carolPage.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  await expect(carolPage.getByTestId("announcer")).toHaveText("");
});
