import { E2E_PASSWORD, expect, test } from "./fixtures.ts";
import {
  appShell,
  conversationItem,
  expectOpen,
  expectUnread,
  openConversation,
  openConversationItem,
  sendMessage,
  contrastRatio,
} from "./support/tally-page.ts";

/** The small things a newcomer meets first (issue 9, item 7). */

test("a reload reopens the conversation each tab had open, and none when it is gone", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const direct = await alice.createConversation([bob.name]);
  const group = await alice.createConversation([bob.name, carol.name], "Weekend hiking crew");
  const first = await alice.openTab(env.serverA, { open: direct.id });
  const second = await alice.openTab(env.serverA, { open: group.id });

  // Each tab keeps its own.
  await first.reload();
  await expectOpen(first, direct.id);
  await second.reload();
  await expectOpen(second, group.id);

  // Gone while the tab was elsewhere: the tab comes back to no open conversation.
  await second.goto("about:blank");
  expect((await alice.context.request.delete(`${env.serverA}/api/conversations/${group.id}`)).status()).toBe(200);
  await second.goto(env.serverA);
  await expect(conversationItem(second, direct.id)).toBeVisible();
  await expect(second.getByTestId("empty-state")).toBeVisible();
  await expect(openConversationItem(second)).toHaveCount(0);
  await second.reload();
  await expect(conversationItem(second, direct.id)).toBeVisible();
  await expect(openConversationItem(second)).toHaveCount(0);
});

test("a signed-out load of / and /lab logs no error to the console", async ({ newContext, env }) => {
  const page = await (await newContext()).newPage();
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(error.message));

  await page.goto(env.serverA);
  await expect(page.getByTestId("login-name")).toBeVisible();
  await page.goto(`${env.serverA}/lab`);
  await expect(page.getByTestId("lab-signed-out")).toBeVisible();
  await page.goto(env.serverA);
  await expect(page.getByTestId("login-name")).toBeVisible();
  expect(errors).toEqual([]);

  // Positive control: the 401 that GET /api/session answers a signed-out page is caught by this recorder.
  await page.evaluate(() => fetch("/api/session"));
  await expect.poll(() => errors.join("\n")).toContain("401");
});

test("New suggests only the people the user talks to, by keyboard and by pointer, and puts the group on top", async ({
  alice,
  bob,
  carol,
  signUp,
  env,
}) => {
  // Someone whose name starts like Bob's but who shares no conversation with Alice.
  const stranger = await signUp(bob.name.slice(0, 4));
  await alice.createConversation([bob.name]);
  const older = await alice.createConversation([carol.name]);
  const page = await alice.openTab(env.serverA, { open: older.id });
  await sendMessage(page, "an older conversation with a message");
  const bobPage = await bob.openTab(env.serverB);

  await page.getByTestId("new-conversation").click();
  const people = page.getByTestId("member-input");
  const suggestions = page.getByTestId("member-suggestion");
  await expect(people).toHaveAccessibleName("People (commas or spaces between names)");
  await people.pressSequentially(bob.name.slice(0, 4));
  await expect(people).toHaveAttribute("aria-expanded", "true");
  await expect(suggestions).toHaveText([bob.name]);
  expect(stranger.name.startsWith(bob.name.slice(0, 4))).toBe(true);
  await people.press("ArrowDown");
  await expect(suggestions.first()).toHaveAttribute("aria-selected", "true");
  await people.press("Enter");
  await expect(people).toHaveValue(`${bob.name}, `);
  await expect(people).toHaveAttribute("aria-expanded", "false");

  await people.pressSequentially(carol.name.slice(0, 6));
  await suggestions.filter({ hasText: carol.name }).click();
  await expect(people).toHaveValue(`${bob.name}, ${carol.name}, `);
  await page.getByTestId("title-input").fill("Weekend hiking crew");
  await page.getByTestId("create-conversation").click();
  await expect(page.getByTestId("conversation-title")).toHaveText("Weekend hiking crew");

  // A new conversation without messages goes above the older ones, for the creator and for a member.
  const created = await openConversationItem(page).getAttribute("data-conversation-id");
  expect(created).toMatch(/^\d+$/);
  for (const tab of [page, bobPage]) {
    await expect(tab.getByTestId("conversation-item").first()).toHaveAttribute("data-conversation-id", created!);
  }

  // The server's refusals read as sentences.
  await page.getByTestId("new-conversation").click();
  await people.fill("nobody_by_that_name");
  await page.getByTestId("create-conversation").click();
  await expect(page.getByTestId("create-error")).toHaveText("No user called 'nobody_by_that_name'.");

  // Escape closes the form (a first Escape only closes an open list of names) and gives focus back to "New".
  await people.press("Escape");
  await expect(page.getByTestId("new-conversation-form")).toHaveCount(0);
  await expect(page.getByTestId("new-conversation")).toBeFocused();
});

test("the header links to the lab, and signing in from the lab returns there", async ({ alice, newContext, env }) => {
  const page = await alice.openTab(env.serverA);
  await page.getByTestId("lab-link").click();
  await expect(page).toHaveURL(`${env.serverA}/lab`);
  await expect(page.getByTestId("lab-run")).toBeVisible();

  const signIn = async (at: string) => {
    const visitor = await (await newContext()).newPage();
    await visitor.goto(at);
    return visitor;
  };
  const fill = async (visitor: Awaited<ReturnType<typeof signIn>>) => {
    await visitor.getByTestId("login-name").fill(alice.name);
    await visitor.getByTestId("login-password").fill(E2E_PASSWORD);
    await visitor.getByTestId("login-submit").click();
  };

  const visitor = await signIn(`${env.serverA}/lab`);
  await visitor.getByTestId("lab-signed-out").getByRole("link", { name: "Sign in" }).click();
  await expect(visitor.getByTestId("login-name")).toBeVisible();
  await fill(visitor);
  await expect(visitor).toHaveURL(`${env.serverA}/lab`);
  await expect(visitor.getByTestId("lab-run")).toBeVisible();

  // A return path to another site is not followed: the chat opens.
  const phished = await signIn(`${env.serverA}/?next=//example.com/lab`);
  await fill(phished);
  await expect(appShell(phished)).toBeVisible();
  expect(new URL(phished.url()).host).toBe(new URL(env.serverA).host);
});

test("without the lab (LAB=0) the header has no Lab link", async ({ alice, startServer }) => {
  const server = await startServer("no-lab", { LAB: "0" });
  const page = await alice.openTab(server.url);
  await expect(page.getByTestId("current-user")).toHaveText(alice.name);
  await expect(page.getByTestId("lab-link")).toHaveCount(0);
});

test("on a phone the open group's header shows its whole title", async ({ alice, bob, carol, env }) => {
  const group = await alice.createConversation([bob.name, carol.name], "Weekend hiking crew");
  const page = await alice.openTab(env.serverA);
  await page.setViewportSize({ width: 375, height: 740 });
  await openConversation(page, group.id);
  const title = page.getByTestId("conversation-title");
  await expect(title).toHaveText("Weekend hiking crew");
  const fits = () => title.evaluate((e) => e.scrollWidth <= e.clientWidth && e.scrollHeight <= e.clientHeight + 1);
  await expect.poll(fits).toBe(true);
});

test("on a phone a sender's longest name is cut with an ellipsis, and the time stays on screen", async ({
  signUp,
  alice,
  env,
}) => {
  const long = await signUp("W".repeat(23)); // 32 characters, the most a name may have
  const direct = await long.createConversation([alice.name]);
  await sendMessage(await long.openTab(env.serverA, { open: direct.id }), "hello");
  const page = await alice.openTab(env.serverA);
  await page.setViewportSize({ width: 375, height: 740 });
  await openConversation(page, direct.id);
  const message = page.getByTestId("message").last();
  await expect(message.locator(".message-sender")).toHaveAttribute("title", long.name);
  const list = page.getByTestId("message-list");
  await expect.poll(() => list.evaluate((e) => e.scrollWidth <= e.clientWidth)).toBe(true);
  const time = (await message.locator("time").boundingBox())!;
  expect(time.x + time.width).toBeLessThanOrEqual(375);
});

test("on a phone the header's links stay clear of the brand and its badge", async ({ alice, bob, env }) => {
  // Notifications allowed: the header shows its widest set, the switch's "Notify: on".
  await alice.context.grantPermissions(["notifications"], { origin: env.serverA });
  const direct = await bob.createConversation([alice.name]);
  const page = await alice.openTab(env.serverA);
  await page.setViewportSize({ width: 375, height: 740 });
  const bobPage = await bob.openTab(env.serverA, { open: direct.id });
  await sendMessage(bobPage, "hi");
  await expect(page.getByTestId("app-badge")).toHaveAttribute("data-count", "1");
  const badge = (await page.getByTestId("app-badge").boundingBox())!;
  for (const id of ["lab-link", "enable-notifications", "notifications-toggle", "account-more"]) {
    const link = page.getByTestId(id);
    if ((await link.count()) === 0) continue;
    const box = (await link.boundingBox())!;
    expect(box.x, `${id} starts right of the badge`).toBeGreaterThanOrEqual(badge.x + badge.width);
    expect(box.x + box.width, `${id} ends inside the screen`).toBeLessThanOrEqual(375);
  }
});

test("a run of messages from one sender shows the name and time once, and the unread ones start their own", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await alice.createConversation([bob.name, carol.name], "Runs");
  const bobPage = await bob.openTab(env.serverA, { open: group.id });
  for (const text of ["one", "two"]) await sendMessage(bobPage, text);
  await sendMessage(await carol.openTab(env.serverA, { open: group.id }), "carol's");
  await sendMessage(bobPage, "three");
  const first = await alice.openTab(env.serverA, { open: group.id });
  await expectUnread(first, group.id, 0);
  await first.close();
  await sendMessage(bobPage, "four");

  const page = await alice.openTab(env.serverA, { open: group.id });
  const list = page.getByTestId("message");
  await expect(list).toHaveCount(5);
  await expect(page.getByTestId("unread-divider")).toBeVisible();
  // A list item holding a separator (a list's children are its items: axe "list"), at 4.5:1 in both modes (the
  // badge's red on the dark background was 3.5:1).
  const separator = page.getByTestId("unread-divider").getByRole("separator", { name: "New messages" });
  await expect(separator).toBeVisible();
  expect(await page.locator(".message-list > :not(li), .message-list > li[role]").count()).toBe(0);
  for (const colorScheme of ["dark", "light"] as const) {
    await page.emulateMedia({ colorScheme });
    expect(await contrastRatio(separator), colorScheme).toBeGreaterThanOrEqual(4.5);
  }
  const named = await list.evaluateAll((items) =>
    items.map((li) => li.querySelector(".message-meta")!.getBoundingClientRect().width > 1),
  );
  // "two" continues bob's run; carol's breaks it; "four" would continue "three" but is the first unread one.
  expect(named).toEqual([true, false, true, true, true]);
  // A continued message still says who wrote it to a screen reader, and its time is in its bubble's title.
  await expect(list.nth(1)).toContainText(bob.name);
  await expect(list.nth(1).locator(".message-bubble")).toHaveAttribute("title", /\d/);
});

test("right-to-left text reads right to left, and a bidi control cannot disguise where a link goes", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const arabic = "مجموعة العمل الأسبوعية — Weekly sync with a very long title";
  const group = await alice.createConversation([bob.name, carol.name], arabic);
  const direct = await bob.createConversation([alice.name]);
  const bobPage = await bob.openTab(env.serverA, { open: direct.id });
  await sendMessage(bobPage, "كيف حالك اليوم؟ أنا بخير، شكرا.");
  await sendMessage(bobPage, "see https://paypal.com\u202E@moc.live/ ok");

  const page = await alice.openTab(env.serverA, { open: direct.id });
  await page.setViewportSize({ width: 375, height: 740 });
  const direction = (locator: ReturnType<typeof page.locator>) =>
    locator.evaluate((e) => getComputedStyle(e).direction);
  const bubbles = page.getByTestId("message").locator(".message-bubble");
  await expect.poll(() => direction(bubbles.first())).toBe("rtl");
  expect(await direction(bubbles.last())).toBe("ltr");
  const link = page.getByTestId("message-link");
  await expect(link).toHaveText("https://paypal.com");
  await expect(link).toHaveAttribute("href", "https://paypal.com/");

  await page.getByRole("button", { name: "Back to conversations" }).click();
  const row = conversationItem(page, group.id);
  // Right to left, the ellipsis cuts the title's English end, not its Arabic start.
  expect(await direction(row.locator(".conversation-title"))).toBe("rtl");
  expect(await direction(conversationItem(page, direct.id).locator(".conversation-preview"))).toBe("ltr");
});

test("a long message shows its first 20 lines and Show more; it counts as seen like any other", async ({
  alice,
  bob,
  env,
}) => {
  const direct = await bob.createConversation([alice.name]);
  const bobPage = await bob.openTab(env.serverA, { open: direct.id });
  const long = Array.from({ length: 60 }, (_, i) => `line ${i + 1}`).join("\n");
  await sendMessage(bobPage, long);
  await sendMessage(bobPage, "short, after it");

  const page = await alice.openTab(env.serverA);
  // A tall phone: the cut message and the one after it fit on screen together.
  await page.setViewportSize({ width: 375, height: 900 });
  await expectUnread(page, direct.id, 2);
  await openConversation(page, direct.id);
  const message = page.getByTestId("message").first();
  const bubble = message.locator(".message-bubble");
  const overflow = () => bubble.evaluate((e) => e.scrollHeight - e.clientHeight);
  await expect(message.getByTestId("cut-message")).toBeVisible();
  expect(await overflow()).toBeGreaterThan(100);
  // 20 lines and the padding: one line is about 22 px here.
  expect((await bubble.boundingBox())!.height).toBeLessThan(22 * 21 + 16);
  // Only the long one has the button, and both count as seen.
  await expect(page.getByRole("button", { name: "Show more" })).toHaveCount(1);
  await expectUnread(page, direct.id, 0);

  const more = message.getByRole("button", { name: "Show more" });
  await expect(more).toHaveAttribute("aria-expanded", "false");
  await more.click();
  const less = message.getByRole("button", { name: "Show less" });
  await expect(less).toHaveAttribute("aria-expanded", "true");
  await expect.poll(overflow).toBeLessThanOrEqual(1);
  await expect(message.getByTestId("cut-message")).toHaveCount(0);
  // Show less is under the whole message, its start scrolled out of view: cut again, the start comes back.
  await less.click();
  await expect(message.getByTestId("cut-message")).toBeVisible();
  expect(await overflow()).toBeGreaterThan(100);
  const startShown = () =>
    bubble.evaluate(
      (e) => e.getBoundingClientRect().top >= e.closest(".message-scroller")!.getBoundingClientRect().top,
    );
  await expect.poll(startShown).toBe(true);
});
