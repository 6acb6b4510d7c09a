import type { Page } from "@playwright/test";
import type { MessageDTO } from "../server/contracts/index.ts";
import { expect, test, type TestUser } from "./fixtures.ts";
import {
  badgeSums,
  expectBadgeSums,
  expectMessageSeqs,
  expectTotalUnread,
  messages,
  openConversation,
  sendMessage,
  watchBadgeSums,
} from "./support/tally-page.ts";

/** Set to a folder to keep screenshots of the states these tests reach (for looking at them, not for asserting). */
const SHOTS = process.env.TALLY_SCREENSHOTS;
async function shot(page: Page, name: string): Promise<void> {
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/${name}.png` });
}

const input = (page: Page) => page.getByTestId("message-input");
const pending = (page: Page) => page.getByTestId("message-pending");
const banner = (page: Page) => page.getByTestId("connection-banner");

/** Types and sends through the composer without waiting for the server: the composer is free again at once. */
async function queue(page: Page, text: string): Promise<void> {
  await input(page).fill(text);
  await input(page).press("Enter");
  await expect(input(page)).toHaveValue("");
}

/** The conversation's messages as the server stored them, read as `user` through `server`. */
async function storedMessages(user: TestUser, server: string, conversationId: number): Promise<MessageDTO[]> {
  // A read, so safe to retry: a keep-alive connection the server closes as it is reused answers ECONNRESET (seen
  // once in a full run, after the context's last request had been idle for some 25 s).
  const res = await user.context.request.get(`${server}/api/conversations/${conversationId}/messages`, {
    headers: { authorization: `Bearer ${user.token}` },
    maxRetries: 2,
  });
  expect(res.ok()).toBe(true);
  return ((await res.json()) as { messages: MessageDTO[] }).messages;
}

test("a draft survives switching conversations and a reload, and is gone once sent", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const withBob = await alice.createConversation([bob.name]);
  const withCarol = await alice.createConversation([carol.name]);
  const page = await alice.openTab(env.serverA, { open: withBob.id });

  await input(page).fill("half a thought for bob");
  await openConversation(page, withCarol.id);
  await expect(input(page)).toHaveValue("");
  await input(page).fill("a line\nfor carol");
  await openConversation(page, withBob.id);
  await expect(input(page)).toHaveValue("half a thought for bob");

  await page.reload();
  await openConversation(page, withCarol.id);
  await expect(input(page)).toHaveValue("a line\nfor carol");
  await openConversation(page, withBob.id);
  await expect(input(page)).toHaveValue("half a thought for bob");

  // Sent: the draft became the message, and a reload does not bring it back.
  await input(page).press("Enter");
  await expect(messages(page).filter({ hasText: "half a thought for bob" })).toHaveAttribute("data-seq", "1");
  await page.reload();
  await openConversation(page, withBob.id);
  await expect(input(page)).toHaveValue("");
  await openConversation(page, withCarol.id);
  await expect(input(page)).toHaveValue("a line\nfor carol");
});

test("a draft is the same in every tab: sent in one, it is gone from the other, which cannot send it again", async ({
  alice,
  bob,
  env,
}) => {
  const conversation = await alice.createConversation([bob.name]);
  const first = await alice.openTab(env.serverA, { open: conversation.id });
  await input(first).fill("my careful draft reply");
  const second = await alice.openTab(env.serverA, { open: conversation.id });
  await expect(input(second)).toHaveValue("my careful draft reply");
  // Edited in one tab, the other follows while it shows what the first started from.
  await input(first).fill("my careful draft reply, edited");
  await expect(input(second)).toHaveValue("my careful draft reply, edited");

  await input(first).press("Enter");
  await expect(messages(first).filter({ hasText: "my careful draft reply, edited" })).toHaveCount(1);
  await expect(input(second)).toHaveValue("");
  await expect(second.getByTestId("send-button")).toBeDisabled();
  expect((await storedMessages(bob, env.serverA, conversation.id)).map((m) => m.content)).toEqual([
    "my careful draft reply, edited",
  ]);

  // And the next draft, from either tab.
  await input(first).fill("from the first tab");
  await expect(input(second)).toHaveValue("from the first tab");
  await input(second).fill("second tab's own words");
  await expect(input(first)).toHaveValue("second tab's own words");
});

test("sends made offline show pending in order and are stored exactly once, in order, after reconnecting", async ({
  alice,
  bob,
  env,
}) => {
  test.setTimeout(90_000);
  const conversation = await alice.createConversation([bob.name]);
  const bobPage = await bob.openTab(env.serverB);
  await expectTotalUnread(bobPage, 0);
  await watchBadgeSums(bobPage);
  // Opening the conversation needs the list, which the first sync over the socket brings: alice is connected.
  const alicePage = await alice.openTab(env.serverA, { open: conversation.id });
  await expect(banner(alicePage)).toHaveCount(0);

  await alice.context.setOffline(true);
  await expect(banner(alicePage)).toHaveText(/^You're offline — messages will be sent when the connection is back\./);
  for (const text of ["one", "two", "three"]) await queue(alicePage, text);
  await expect(pending(alicePage)).toHaveText([/one/, /two/, /three/]);
  await expect(pending(alicePage).first()).toContainText("waiting for connection");
  await expect(banner(alicePage)).toContainText("3 messages waiting to be sent.");
  await shot(alicePage, "offline-banner-with-pending");
  expect(await storedMessages(bob, env.serverB, conversation.id)).toEqual([]);

  await alice.context.setOffline(false);
  await expect(banner(alicePage)).toHaveCount(0, { timeout: 30_000 });
  await expect(pending(alicePage)).toHaveCount(0);
  await expectMessageSeqs(alicePage, [1, 2, 3]);
  await expect(messages(alicePage)).toHaveText([/one/, /two/, /three/]);

  const stored = await storedMessages(bob, env.serverB, conversation.id);
  expect(stored.map((m) => [m.seq, m.content])).toEqual([
    [1, "one"],
    [2, "two"],
    [3, "three"],
  ]);
  expect(new Set(stored.map((m) => m.clientMsgId)).size).toBe(3);

  await expectTotalUnread(bobPage, 3);
  await expect.poll(async () => (await bob.snapshot(env.serverB)).totalUnread).toBe(3);
  // +3 once: one message at a time or all at once, never beyond 3 and never a total the rows did not add up to.
  const values = (await badgeSums(bobPage)).map((s) => s.app).filter((v, i, all) => i === 0 || all[i - 1] !== v);
  expect([
    [0, 1, 2, 3],
    [0, 3],
    [0, 1, 3],
    [0, 2, 3],
  ]).toContainEqual(values);
  await expectBadgeSums(bobPage, values);
});

test("a conversation opened offline before it ever loaded says it will load, and loads once the connection is back", async ({
  alice,
  bob,
  env,
}) => {
  test.setTimeout(90_000);
  const conversation = await bob.createConversation([alice.name]);
  const bobPage = await bob.openTab(env.serverB, { open: conversation.id });
  for (const text of ["one", "two"]) await sendMessage(bobPage, text);
  const alicePage = await alice.openTab(env.serverA);
  await expectTotalUnread(alicePage, 2);

  await alice.context.setOffline(true);
  await expect(banner(alicePage)).toHaveAttribute("data-state", "offline");
  await openConversation(alicePage, conversation.id);
  // Not "Could not load messages. Retry": a retry cannot help yet, and none is needed after.
  await expect(alicePage.getByTestId("history-error")).toHaveText(
    "Not connected: the messages load by themselves once the connection is back.",
  );
  await expect(alicePage.getByTestId("history-error").getByRole("button")).toHaveCount(0);
  // What she writes meanwhile shows, waiting (the list was hidden until a load positioned it, which never came).
  await queue(alicePage, "reply from offline");
  await expect(pending(alicePage)).toHaveText([/reply from offline/]);
  await expect(pending(alicePage)).toBeVisible();
  await shot(alicePage, "offline-never-loaded");

  await alice.context.setOffline(false);
  await expect(pending(alicePage)).toHaveCount(0);
  await expectMessageSeqs(alicePage, [1, 2, 3]);
  await expect(alicePage.getByTestId("history-error")).toHaveCount(0);
  // Seen once loaded, in a window being looked at: read (her reply read nothing; looking did).
  await expectTotalUnread(alicePage, 0);
});

test("messages pending at a reload are there after it and are stored once, in order, with their own clientMsgIds", async ({
  alice,
  bob,
  env,
}) => {
  test.setTimeout(120_000);
  const conversation = await alice.createConversation([bob.name]);
  // A browser cannot load a page while offline, so after going offline the socket alone stays cut off: "closed"
  // refuses it (the page loads, the socket cannot connect), "no sends" lets everything through but message:send
  // (no answer comes, so the message stays pending), "open" lets everything through.
  let socket: "open" | "closed" | "no sends" = "open";
  await alice.context.routeWebSocket(/\/socket\.io\//, (ws) => {
    if (socket === "closed") {
      void ws.close();
      return;
    }
    const server = ws.connectToServer();
    ws.onMessage((frame) => {
      if (socket === "no sends" && String(frame).includes('"message:send"')) return;
      server.send(frame);
    });
  });
  await alice.context.route(/\/socket\.io\//, (route) => (socket === "closed" ? route.abort() : route.continue()));
  const page = await alice.openTab(env.serverA, { open: conversation.id });
  await expect(banner(page)).toHaveCount(0);

  await alice.context.setOffline(true);
  socket = "closed";
  await expect(banner(page)).toContainText("You're offline");
  await queue(page, "first");
  await queue(page, "second");
  await expect(pending(page)).toHaveText([/first/, /second/]);
  const saved = await page.evaluate((key) => sessionStorage.getItem(key), `tally:queue:${alice.id}`);
  const ids = (JSON.parse(saved ?? "{}") as { order?: string[] }).order;
  expect(ids).toHaveLength(2);

  await alice.context.setOffline(false);
  await page.reload();
  await expect(banner(page)).toHaveText("Connecting… 2 messages waiting to be sent.");
  await shot(page, "reload-with-pending");
  expect(await storedMessages(bob, env.serverB, conversation.id)).toEqual([]);

  // Connected, but no send gets through: the conversation can be opened and shows both, still pending, in order.
  socket = "no sends";
  await openConversation(page, conversation.id);
  await expect(pending(page)).toHaveText([/first/, /second/]);
  await shot(page, "pending-after-reload");
  expect(await storedMessages(bob, env.serverB, conversation.id)).toEqual([]);

  socket = "open";
  await expect(pending(page)).toHaveCount(0, { timeout: 60_000 });
  await expectMessageSeqs(page, [1, 2]);
  await expect(messages(page)).toHaveText([/first/, /second/]);
  const stored = await storedMessages(bob, env.serverB, conversation.id);
  expect(stored.map((m) => [m.seq, m.content, m.clientMsgId])).toEqual([
    [1, "first", ids?.[0]],
    [2, "second", ids?.[1]],
  ]);
  await expect.poll(() => page.evaluate((key) => sessionStorage.getItem(key), `tally:queue:${alice.id}`)).toBeNull();
});

test("the connection banner appears while the server is gone and clears, with nothing stale left, once back", async ({
  alice,
  bob,
  env,
  startServer,
}) => {
  test.setTimeout(90_000);
  const server = await startServer("banner");
  const conversation = await alice.createConversation([bob.name]);
  const page = await alice.openTab(server.url, { open: conversation.id });
  await expect(banner(page)).toHaveCount(0);

  await server.stop();
  await expect(banner(page)).toHaveText("Reconnecting…");
  await expect(banner(page)).toHaveAttribute("data-state", "reconnecting");
  await queue(page, "while the server was gone");
  await expect(banner(page)).toHaveText("Reconnecting… 1 message waiting to be sent.");
  await expect(pending(page)).toHaveCount(1);

  await server.restart();
  await expect(banner(page)).toHaveCount(0, { timeout: 30_000 });
  await expect(messages(page).filter({ hasText: "while the server was gone" })).toHaveAttribute("data-seq", "1");
  await expect(pending(page)).toHaveCount(0);
  await expect(page.getByTestId("pending-error")).toHaveCount(0);
  expect((await storedMessages(bob, env.serverA, conversation.id)).map((m) => m.content)).toEqual([
    "while the server was gone",
  ]);
});

test("a refused message says why and offers retry and discard", async ({ alice, bob, env }) => {
  const conversation = await alice.createConversation([bob.name]);
  const page = await alice.openTab(env.serverA, { open: conversation.id });

  // PostgreSQL text cannot hold NUL, so the server refuses it (`invalid`); nothing else in the UI stops it.
  await queue(page, "before\u0000after");
  await queue(page, "the next one still goes");
  const refused = pending(page);
  await expect(refused).toHaveCount(1);
  await expect(refused).toHaveAttribute("data-status", "refused");
  await expect(refused.getByTestId("pending-error")).toContainText("NUL character");
  await expect(messages(page).filter({ hasText: "the next one still goes" })).toHaveAttribute("data-seq", "1");
  await shot(page, "refused-with-retry-discard");

  // Retry sends it again (refused again, so still there); discard removes it.
  await refused.getByTestId("pending-retry").click();
  await expect(refused).toHaveAttribute("data-status", "refused");
  await refused.getByTestId("pending-discard").click();
  await expect(pending(page)).toHaveCount(0);
  expect((await storedMessages(alice, env.serverA, conversation.id)).map((m) => m.content)).toEqual([
    "the next one still goes",
  ]);
});

test("the composer counts characters near the limit and will not send past it", async ({ alice, bob, env }) => {
  const conversation = await alice.createConversation([bob.name]);
  const page = await alice.openTab(env.serverA, { open: conversation.id });
  const counter = page.getByTestId("char-counter");

  await input(page).fill("x".repeat(3000));
  await expect(counter).toHaveCount(0);
  await input(page).fill("x".repeat(3950));
  await expect(counter).toHaveText("3,950 / 4,000");
  await expect(counter).toHaveAttribute("data-over", "false");
  await shot(page, "counter-near-limit");

  await input(page).fill(`${"x".repeat(4001)}  `);
  await expect(counter).toHaveText("4,001 / 4,000 — 1 too many to send");
  await expect(counter).toHaveAttribute("data-over", "true");
  await expect(page.getByTestId("send-button")).toBeDisabled();
  await input(page).press("Enter");
  await shot(page, "counter-over-limit");
  await expect(pending(page)).toHaveCount(0);
  await expect(input(page)).toHaveValue(`${"x".repeat(4001)}  `);

  await input(page).press("Backspace");
  await input(page).press("Backspace");
  await input(page).press("Backspace");
  await expect(counter).toHaveText("4,000 / 4,000");
  await expect(page.getByTestId("send-button")).toBeEnabled();

  // Nothing to see (spaces, a zero-width space) is no message either: Send is off and Enter sends nothing.
  await input(page).fill(" \u200b ");
  await expect(page.getByTestId("send-button")).toBeDisabled();
  await input(page).press("Enter");
  await expect(pending(page)).toHaveCount(0);
  expect(await storedMessages(alice, env.serverA, conversation.id)).toEqual([]);
});
