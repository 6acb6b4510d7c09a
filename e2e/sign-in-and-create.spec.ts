import { E2E_PASSWORD, expect, test, uniqueName } from "./fixtures.ts";
import {
  appShell,
  conversationItem,
  expectOpen,
  expectTotalUnread,
  expectUnread,
  openConversation,
  sendMessage,
} from "./support/tally-page.ts";

test("creating an account refuses an invalid name and accepts a valid one", async ({ newContext, env }) => {
  const page = await (await newContext()).newPage();
  await page.goto(env.serverA);
  await page.getByTestId("login-mode-sign-up").click();
  const name = page.getByTestId("login-name");
  await page.getByTestId("login-password").fill(E2E_PASSWORD);

  await name.fill("José");
  await page.getByTestId("login-submit").click();
  // The answer points at what the rule refuses, not only at the rule.
  await expect(page.getByTestId("login-error")).toHaveText(
    "A name cannot have 'é': use a–z, A–Z, 0–9, _ or - (1–32 characters).",
  );
  await expect(appShell(page)).toHaveCount(0);
  await expect(name).toBeVisible();

  const valid = uniqueName("dora");
  await name.fill(valid);
  await page.getByTestId("login-submit").click();
  await expect(appShell(page)).toBeVisible();
  await expect(page.getByTestId("login-error")).toHaveCount(0);
  await expectTotalUnread(page, 0);
  // Signed in for real: the cookie now opens the API.
  const session = await page.request.get(`${env.serverA}/api/session`);
  expect(((await session.json()) as { user?: { name?: string } }).user?.name).toBe(valid);
});

test("a group created from the UI reaches its members at once, a direct conversation with its first message", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const alicePage = await alice.openTab(env.serverA);
  const bobPage = await bob.openTab(env.serverA);
  const carolPage = await carol.openTab(env.serverB);

  /** Fills the form the way a person would and resolves with the id the server gave the new conversation. */
  const create = async (members: string): Promise<number> => {
    const known = new Set((await alice.snapshot()).conversations.map((c) => c.id));
    await alicePage.getByTestId("new-conversation").click();
    await alicePage.getByTestId("member-input").fill(members);
    await alicePage.getByTestId("create-conversation").click();
    let created: number | undefined;
    await expect
      .poll(async () => {
        created = (await alice.snapshot()).conversations.find((c) => !known.has(c.id))?.id;
        return created;
      })
      .toBeDefined();
    if (created === undefined) throw new Error("unreachable: the poll above waited for it");
    await expectOpen(alicePage, created);
    return created;
  };

  const direct = await create(bob.name);
  await expect(alicePage.getByTestId("conversation-members")).toContainText(bob.name);
  await expect(conversationItem(alicePage, direct)).toBeVisible();

  const group = await create(`${bob.name}, ${carol.name}`);
  for (const name of [bob.name, carol.name]) {
    await expect(alicePage.getByTestId("conversation-members")).toContainText(name);
  }
  await expect(conversationItem(alicePage, group)).toBeVisible();
  await expect(conversationItem(bobPage, group)).toBeVisible();
  await expect(conversationItem(carolPage, group)).toBeVisible();
  const members = (await carol.snapshot(env.serverB)).conversations
    .find((c) => c.id === group)
    ?.members.map((m) => m.name);
  expect(members?.sort()).toEqual([alice.name, bob.name, carol.name].sort());

  // The group's row came to bob after the direct conversation was created, and the direct one did not: starting a
  // conversation puts nothing in the other person's list. Nor does a reload show it.
  await expect(conversationItem(bobPage, direct)).toHaveCount(0);
  expect((await bob.snapshot()).conversations.map((c) => c.id)).not.toContain(direct);
  await bobPage.reload();
  await expect(conversationItem(bobPage, group)).toBeVisible();
  await expect(conversationItem(bobPage, direct)).toHaveCount(0);
  // Its first message brings it, unread.
  await openConversation(alicePage, direct);
  await sendMessage(alicePage, "hi bob");
  await expect(conversationItem(bobPage, direct)).toContainText(alice.name);
  await expect(conversationItem(bobPage, direct)).toContainText("hi bob");
  await expectUnread(bobPage, direct, 1);
  await expect(conversationItem(carolPage, direct)).toHaveCount(0);
});
