import { expect, test } from "./fixtures.ts";
import {
  expectMessageSeqs,
  expectTotalUnread,
  expectUnread,
  hide,
  lookAt,
  messages,
  openConversation,
  sendMessage,
} from "./support/tally-page.ts";

test("history and counts survive a reload and a server restart", async ({ alice, bob, startServer, env }) => {
  // Two extra server starts (Next.js included) on two cores.
  test.setTimeout(240_000);
  const serverC = await startServer("C");
  const conversation = await bob.createConversation([alice.name]);

  const alicePage = await alice.openTab(serverC.url, { window: "looking", open: conversation.id });
  const bobPage = await bob.openTab(env.serverA, { open: conversation.id });

  for (const text of ["first", "second", "third"]) await sendMessage(bobPage, text);
  await expectMessageSeqs(alicePage, [1, 2, 3]);
  await expectTotalUnread(alicePage, 0);

  // Alice's tab goes to the background with the conversation still open (the window control keeps that state
  // across reloads, like a real background tab).
  await hide(alicePage);
  await sendMessage(bobPage, "fourth");
  await sendMessage(bobPage, "fifth");
  await expectMessageSeqs(alicePage, [1, 2, 3, 4, 5]);
  await expectUnread(alicePage, conversation.id, 2);

  const expectAfterReload = async (seqs: number[], lastText: string, unread: number): Promise<void> => {
    await alicePage.reload();
    await expectUnread(alicePage, conversation.id, unread);
    // The open conversation is not part of the URL, so a reload shows the list alone.
    await openConversation(alicePage, conversation.id);
    await expectMessageSeqs(alicePage, seqs);
    await expect(messages(alicePage).last()).toContainText(lastText);
    // Opened in a tab that is still hidden: shown, but not read.
    await expectTotalUnread(alicePage, unread);
    expect((await alice.snapshot(serverC.url)).totalUnread).toBe(unread);
  };
  await expectAfterReload([1, 2, 3, 4, 5], "fifth", 2);

  // While C is down Bob (on A) writes again; Alice's open page must catch up once C is back.
  await serverC.stop();
  await sendMessage(bobPage, "sixth");
  await serverC.restart();
  await expect(messages(alicePage).filter({ hasText: "sixth" })).toBeVisible({ timeout: 30_000 });
  await expectMessageSeqs(alicePage, [1, 2, 3, 4, 5, 6]);
  await expectUnread(alicePage, conversation.id, 3);

  await expectAfterReload([1, 2, 3, 4, 5, 6], "sixth", 3);

  await lookAt(alicePage);
  await expectTotalUnread(alicePage, 0);
  await expect.poll(async () => (await alice.snapshot(serverC.url)).totalUnread).toBe(0);
});
