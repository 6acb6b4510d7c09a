import { expect, test } from "./fixtures.ts";
import {
  badgeLog,
  clearBadgeLog,
  conversationItem,
  expectTotalUnread,
  expectUnread,
  hide,
  openConversation,
  sendMessage,
} from "./support/tally-page.ts";

test("a group message raises the other members' badges, not the sender's", async ({ alice, bob, carol, env }) => {
  const group = await alice.createConversation([bob.name, carol.name], "trio");
  expect(group.kind).toBe("group");

  const alicePage = await alice.openTab(env.serverA);
  const bobPage = await bob.openTab(env.serverA);
  const carolPage = await carol.openTab(env.serverB);
  for (const page of [alicePage, bobPage, carolPage]) await expect(conversationItem(page, group.id)).toBeVisible();

  await openConversation(alicePage, group.id);
  await clearBadgeLog(alicePage);
  await sendMessage(alicePage, "hello everyone", "button");
  for (const page of [bobPage, carolPage]) await expectUnread(page, group.id, 1);
  await expectTotalUnread(alicePage, 0);
  expect((await badgeLog(alicePage)).filter((s) => s.kind === "app" && s.value !== "0")).toEqual([]);
  // The server never counted it for the sender, whatever her tab was doing.
  expect((await alice.snapshot()).totalUnread).toBe(0);

  // Alice looks away; Bob answers from the open group.
  await hide(alicePage);
  await openConversation(bobPage, group.id);
  await expectTotalUnread(bobPage, 0);
  await sendMessage(bobPage, "hi alice and carol");
  await expectUnread(alicePage, group.id, 1);
  await expectUnread(carolPage, group.id, 2);
  await expectTotalUnread(bobPage, 0);
  const [aliceState, bobState, carolState] = await Promise.all([alice.snapshot(), bob.snapshot(), carol.snapshot()]);
  expect([aliceState.totalUnread, bobState.totalUnread, carolState.totalUnread]).toEqual([1, 0, 2]);
});

test("at 320 px an open members list of 32-character names fits the screen and shows each name whole", async ({
  signUp,
  env,
}) => {
  // uniqueName adds "_" and 8 letters: 23 + 9 = 32 characters, the longest name there is.
  const [first, second, third] = await Promise.all(
    ["Bartholomew_abcdefghijk", "Maximiliana-zyxwvutsrqp", "Constantinople_qwertyui"].map((prefix) => signUp(prefix)),
  );
  const group = await first!.createConversation([second!.name, third!.name], "Quarterly planning for the north");
  const page = await first!.openTab(env.serverA, { open: group.id });
  await page.setViewportSize({ width: 320, height: 568 });
  await page.getByTestId("conversation-members").click();
  const list = page.getByTestId("members-list");
  await expect(list.getByRole("listitem")).toHaveCount(3);

  await expect.poll(async () => (await list.boundingBox())?.x).toBeGreaterThanOrEqual(0);
  await expect.poll(async () => list.evaluate((e) => e.getBoundingClientRect().right)).toBeLessThanOrEqual(320);
  expect(await page.evaluate(() => document.documentElement.scrollWidth), "no sideways scroll").toBeLessThanOrEqual(
    320,
  );
  // Each name is all there to read: none cut off at the list's edge, nor pushed out by its creator's "Remove".
  for (const user of [first!, second!, third!]) {
    const item = list.getByRole("listitem").filter({ hasText: user.name });
    await expect(item.locator("span[dir=auto]")).toHaveText(user.name);
    expect(await item.evaluate((e) => e.scrollWidth <= e.clientWidth), `${user.name} not clipped`).toBe(true);
  }
  await expect(list.getByTestId("remove-member")).toHaveCount(2);
  for (const button of await list.getByTestId("remove-member").all()) {
    const box = await button.boundingBox();
    expect(box!.x + box!.width, "Remove inside the screen").toBeLessThanOrEqual(320);
  }
});
