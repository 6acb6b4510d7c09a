import { expect, test } from "./fixtures.ts";
import {
  blur,
  conversationItem,
  expectBadgeSums,
  expectConversationUnread,
  expectTotalUnread,
  expectUnread,
  lookAt,
  messages,
  openConversation,
  sendMessage,
  watchBadgeSums,
} from "./support/tally-page.ts";

test("adding someone to a group: it joins their list with nothing unread, and only what comes after counts", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await alice.createConversation([bob.name], "plans");
  const direct = await bob.createConversation([carol.name]);
  const bobPage = await bob.openTab(env.serverA, { open: direct.id });
  await sendMessage(bobPage, "hi carol");
  await openConversation(bobPage, group.id);

  const alicePage = await alice.openTab(env.serverA, { open: group.id });
  await sendMessage(alicePage, "one");
  await sendMessage(alicePage, "two");

  // Carol, on the other instance, with one unread message elsewhere; her badge is watched from here on.
  const carolPage = await carol.openTab(env.serverB, { window: "blurred" });
  await expectUnread(carolPage, direct.id, 1);
  await watchBadgeSums(carolPage);

  // A name nobody has: said in the form, which stays open; nothing changes.
  await alicePage.getByTestId("add-people").click();
  const input = alicePage.getByTestId("add-member-input");
  await expect(input).toBeFocused();
  await input.fill("nobody_by_this_name");
  await alicePage.getByTestId("add-people-submit").click();
  await expect(alicePage.getByTestId("add-people-error")).toContainText("nobody_by_this_name");

  await input.fill(carol.name);
  await alicePage.getByTestId("add-people-submit").click();
  await expect(alicePage.getByTestId("add-people-form")).toHaveCount(0);
  await expect(alicePage.getByTestId("add-people")).toBeFocused();
  await expect(alicePage.getByTestId("announcer")).toHaveText(`Added ${carol.name} to “plans”.`);
  await expect(alicePage.getByTestId("conversation-members")).toContainText("3 members");
  await expect(alicePage.getByTestId("conversation-members")).toContainText(carol.name);
  await expect(alicePage.getByTestId("member-added")).toHaveText(new RegExp(`^You added ${carol.name} `));
  // Bob, who had it open, sees her come.
  await expect(bobPage.getByTestId("member-added")).toHaveText(new RegExp(`^${alice.name} added ${carol.name} `));
  await expect(bobPage.getByTestId("conversation-members")).toContainText(carol.name);

  // In Carol's list at once, with nothing unread: her badge never moved.
  await expectConversationUnread(carolPage, group.id, 0);
  await expectTotalUnread(carolPage, 1);
  await expectBadgeSums(carolPage, [1]);

  // She reads what was said before she came, none of it new to her count; her line names who added her.
  await lookAt(carolPage);
  await openConversation(carolPage, group.id);
  await expect(messages(carolPage)).toHaveText([/one/, /two/]);
  await expect(carolPage.getByTestId("member-added")).toHaveText(new RegExp(`^${alice.name} added you `));
  await expect(carolPage.getByTestId("unread-divider")).toHaveCount(0);

  // What comes after counts for her.
  await blur(carolPage);
  await sendMessage(alicePage, "welcome, carol");
  await expectUnread(carolPage, group.id, 1, 2);
  await expectBadgeSums(carolPage, [1, 2]);
  const snapshot = await carol.snapshot();
  expect(snapshot.totalUnread).toBe(2);
  expect(snapshot.conversations.find((c) => c.id === group.id)).toMatchObject({ unreadCount: 1 });

  // After a reload, Bob's line says who added her.
  await bobPage.reload();
  await openConversation(bobPage, group.id);
  await expect(bobPage.getByTestId("member-added")).toHaveText(new RegExp(`^${alice.name} added ${carol.name} `));
  await expect(conversationItem(bobPage, group.id)).toBeVisible();
});
