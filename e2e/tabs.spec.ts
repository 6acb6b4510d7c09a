import type { Page } from "@playwright/test";
import { expect, test, type TestUser } from "./fixtures.ts";
import {
  expectMessageSeqs,
  expectTotalUnread,
  expectUnread,
  hide,
  lookAt,
  openConversation,
  sendMessage,
} from "./support/tally-page.ts";

/** Two tabs of `user`'s in one browser window: the first is in front, the second behind it. */
async function twoTabs(user: TestUser, frontServer: string, behindServer: string): Promise<[Page, Page]> {
  const front = await user.openTab(frontServer);
  const behind = await user.openTab(behindServer, { window: "hidden" });
  await lookAt(front);
  return [front, behind];
}

test("opening the conversation in one tab clears the badge in both tabs", async ({ alice, bob, env }) => {
  const conversation = await bob.createConversation([alice.name]);
  const [front, behind] = await twoTabs(alice, env.serverA, env.serverA);
  const bobPage = await bob.openTab(env.serverA, { open: conversation.id });
  await sendMessage(bobPage, "first");
  await sendMessage(bobPage, "second");

  for (const tab of [front, behind]) await expectUnread(tab, conversation.id, 2);

  await openConversation(front, conversation.id);
  await expectMessageSeqs(front, [1, 2]);
  for (const tab of [front, behind]) await expectUnread(tab, conversation.id, 0);
  expect((await alice.snapshot()).totalUnread).toBe(0);
});

test("tabs on two server instances stay in step", async ({ alice, bob, env }) => {
  const conversation = await bob.createConversation([alice.name]);
  const [onA, onB] = await twoTabs(alice, env.serverA, env.serverB);
  // Bob on B: his message reaches the tab on A only through the Redis adapter.
  const bobPage = await bob.openTab(env.serverB, { open: conversation.id });

  await sendMessage(bobPage, "first");
  for (const tab of [onA, onB]) await expectTotalUnread(tab, 1);
  await sendMessage(bobPage, "second");
  for (const tab of [onA, onB]) await expectUnread(tab, conversation.id, 2);

  // Reading on A clears B.
  await openConversation(onA, conversation.id);
  await expectMessageSeqs(onA, [1, 2]);
  for (const tab of [onA, onB]) await expectUnread(tab, conversation.id, 0);

  // And the other way round: A goes to the background, B comes to the front and reads.
  await hide(onA);
  await sendMessage(bobPage, "third");
  for (const tab of [onA, onB]) await expectUnread(tab, conversation.id, 1);
  await lookAt(onB);
  await openConversation(onB, conversation.id);
  await expectMessageSeqs(onB, [1, 2, 3]);
  for (const tab of [onA, onB]) await expectUnread(tab, conversation.id, 0);
  expect((await alice.snapshot(env.serverB)).totalUnread).toBe(0);
});
