import { expect, test } from "./fixtures.ts";
import {
  expectConversationUnread,
  expectMessageSeqs,
  expectTotalUnread,
  hide,
  lookAt,
  openConversation,
  sendMessage,
} from "./support/tally-page.ts";

test("opening the conversation in one tab clears the badge in both tabs", async ({ signUp, env }) => {
  const alice = await signUp("alice");
  const bob = await signUp("bob");
  const conversation = await bob.createConversation([alice.name]);

  // Two tabs of one browser window: the first is in front, the second behind it.
  const front = await alice.openTab(env.serverA);
  const behind = await alice.openTab(env.serverA);
  await hide(behind);
  await lookAt(front);

  const bobPage = await bob.openTab(env.serverA);
  await openConversation(bobPage, conversation.id);
  await sendMessage(bobPage, "first");
  await sendMessage(bobPage, "second");

  for (const tab of [front, behind]) {
    await expectConversationUnread(tab, conversation.id, 2);
    await expectTotalUnread(tab, 2);
  }

  await openConversation(front, conversation.id);
  await expectMessageSeqs(front, [1, 2]);
  for (const tab of [front, behind]) {
    await expectConversationUnread(tab, conversation.id, 0);
    await expectTotalUnread(tab, 0);
  }
  expect((await alice.snapshot()).totalUnread).toBe(0);
});

test("tabs on two server instances stay in step", async ({ signUp, env }) => {
  const alice = await signUp("alice");
  const bob = await signUp("bob");
  const conversation = await bob.createConversation([alice.name]);

  const onA = await alice.openTab(env.serverA);
  const onB = await alice.openTab(env.serverB);
  await hide(onB);
  await lookAt(onA);
  // Bob on B: his message reaches the tab on A only through the Redis adapter.
  const bobPage = await bob.openTab(env.serverB);
  await openConversation(bobPage, conversation.id);

  await sendMessage(bobPage, "first");
  for (const tab of [onA, onB]) await expectTotalUnread(tab, 1);
  await sendMessage(bobPage, "second");
  for (const tab of [onA, onB]) {
    await expectConversationUnread(tab, conversation.id, 2);
    await expectTotalUnread(tab, 2);
  }

  // Reading on A clears B.
  await openConversation(onA, conversation.id);
  await expectMessageSeqs(onA, [1, 2]);
  for (const tab of [onA, onB]) {
    await expectConversationUnread(tab, conversation.id, 0);
    await expectTotalUnread(tab, 0);
  }

  // And the other way round: A goes to the background, B comes to the front and reads.
  await hide(onA);
  await sendMessage(bobPage, "third");
  for (const tab of [onA, onB]) {
    await expectConversationUnread(tab, conversation.id, 1);
    await expectTotalUnread(tab, 1);
  }
  await lookAt(onB);
  await openConversation(onB, conversation.id);
  await expectMessageSeqs(onB, [1, 2, 3]);
  for (const tab of [onA, onB]) {
    await expectConversationUnread(tab, conversation.id, 0);
    await expectTotalUnread(tab, 0);
  }
  expect((await alice.snapshot(env.serverB)).totalUnread).toBe(0);
});
