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

test("a group's creator removes a member: the group and its count leave their tabs together, and the others see who did it", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await alice.createConversation([bob.name, carol.name], "plans");
  const direct = await bob.createConversation([carol.name]);
  const bobPage = await bob.openTab(env.serverA, { open: direct.id });
  await sendMessage(bobPage, "hi carol");
  await openConversation(bobPage, group.id);

  const alicePage = await alice.openTab(env.serverA, { open: group.id });
  await sendMessage(alicePage, "one");
  await sendMessage(alicePage, "two");

  // Carol, on the other instance, has the group open in a window without focus: nothing of it is read.
  const carolPage = await carol.openTab(env.serverB, { window: "blurred" });
  await openConversation(carolPage, group.id);
  await expectUnread(carolPage, group.id, 2, 3);
  await watchBadgeSums(carolPage);

  // Only the creator is offered "Remove", and not next to herself.
  await bobPage.getByTestId("conversation-members").click();
  await expect(bobPage.getByTestId("members-list")).toBeVisible();
  await expect(bobPage.getByTestId("remove-member")).toHaveCount(0);
  await bobPage.keyboard.press("Escape");

  await alicePage.getByTestId("conversation-members").click();
  const items = alicePage.getByTestId("members-list-item");
  await expect(items).toHaveCount(3);
  await expect(items.filter({ hasText: alice.name }).getByTestId("remove-member")).toHaveCount(0);
  let asked = "";
  alicePage.once("dialog", (dialog) => {
    asked = dialog.message();
    void dialog.accept();
  });
  await alicePage.getByRole("button", { name: `Remove ${carol.name} from the group` }).click();
  expect(asked).toBe(`Remove ${carol.name} from “plans”? The group leaves their list, and they cannot be added back.`);
  await expect(alicePage.getByTestId("announcer")).toHaveText(`Removed ${carol.name} from “plans”.`);
  await expect(items).toHaveCount(2);
  await expect(alicePage.getByTestId("conversation-members")).toBeFocused();
  await expect(alicePage.getByTestId("member-left")).toHaveText(new RegExp(`^You removed ${carol.name} `));
  // Bob, who has it open, sees who removed her.
  await expect(bobPage.getByTestId("member-left")).toHaveText(new RegExp(`^${alice.name} removed ${carol.name} `));
  await expect(bobPage.getByTestId("conversation-members")).not.toContainText(carol.name);

  // Carol: the group's row and its 2 leave in one step; her pane says who removed her.
  await expect(conversationItem(carolPage, group.id)).toHaveCount(0);
  await expectUnread(carolPage, direct.id, 1);
  await expectTotalUnread(carolPage, 1);
  await expectBadgeSums(carolPage, [3, 1]);
  await expect(carolPage.getByTestId("gone-notice")).toContainText(`${alice.name} removed you from “plans”.`);
  const snapshot = await carol.snapshot();
  expect(snapshot.conversations.map((c) => c.id)).toEqual([direct.id]);
  expect(snapshot.totalUnread).toBe(1);

  // The group goes on without her, and her count does not come back with its next message.
  await blur(carolPage);
  await sendMessage(alicePage, "three");
  await expectConversationUnread(bobPage, group.id, 0);
  await expectTotalUnread(carolPage, 1);

  // After a reload, Bob's history still says who removed her.
  await bobPage.reload();
  await openConversation(bobPage, group.id);
  await expect(bobPage.getByTestId("member-left")).toHaveText(new RegExp(`^${alice.name} removed ${carol.name} `));
});

test("when the owner leaves, the member longest in the group is offered Remove and Delete at once", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await alice.createConversation([bob.name, carol.name], "handed on");
  // Both were there from the start: the older account is the heir.
  const [heir, other] = bob.id < carol.id ? [bob, carol] : [carol, bob];
  const heirPage = await heir.openTab(env.serverB, { open: group.id });
  await expect(heirPage.getByTestId("delete-conversation")).toHaveCount(0);
  const otherPage = await other.openTab(env.serverA, { open: group.id });

  const alicePage = await alice.openTab(env.serverA, { open: group.id });
  alicePage.once("dialog", (dialog) => void dialog.accept());
  await alicePage.getByTestId("leave-conversation").click();
  await expect(conversationItem(alicePage, group.id)).toHaveCount(0);

  // The heir's open pane offers Delete and, beside the other member, Remove, without a reload, and says why.
  await expect(heirPage.getByTestId("delete-conversation")).toBeVisible();
  const note = "You are now the owner of “handed on”: you can remove people from it, and delete it.";
  await expect(heirPage.getByRole("status").filter({ hasText: note })).toHaveAttribute("data-testid", "owner-note");
  await expect(otherPage.getByTestId("owner-note")).toBeEmpty();
  await heirPage.getByTestId("conversation-members").click();
  await expect(heirPage.getByTestId("remove-member")).toHaveCount(1);
  await expect(otherPage.getByTestId("conversation-members")).toContainText("2 members");
  await expect(otherPage.getByTestId("delete-conversation")).toHaveCount(0);
  await otherPage.getByTestId("conversation-members").click();
  await expect(otherPage.getByTestId("remove-member")).toHaveCount(0);
});
