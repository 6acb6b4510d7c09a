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
