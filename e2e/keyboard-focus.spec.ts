import type { Page } from "@playwright/test";
import { expect, test, uniqueName } from "./fixtures.ts";
import { conversationItem, openConversation, sendMessage } from "./support/tally-page.ts";

/**
 * Where the keyboard's focus goes when what held it goes away: never to the page itself, from where the next Tab
 * would start at the top (found by a keyboard-only walkthrough).
 */

/** The focused element's test id and conversation id, or "body". */
const focused = (page: Page) =>
  page.evaluate(() => {
    const e = document.activeElement as HTMLElement | null;
    if (!e || e === document.body) return "body";
    return [e.dataset.testid ?? e.getAttribute("aria-label") ?? e.tagName, e.dataset.conversationId]
      .filter(Boolean)
      .join(" ");
  });

test("closing, leaving or losing the open conversation puts the focus on the list or on the notice that says why", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const direct = await alice.createConversation([bob.name]);
  const group = await alice.createConversation([bob.name, carol.name], "Focus group");
  const doomed = await bob.createConversation([alice.name, carol.name], "Doomed");
  const page = await alice.openTab(env.serverA);

  // On a phone, Back lands on the row the conversation was opened from.
  await page.setViewportSize({ width: 375, height: 740 });
  await conversationItem(page, direct.id).focus();
  await page.keyboard.press("Enter");
  await page.getByRole("button", { name: "Back to conversations" }).focus();
  await page.keyboard.press("Enter");
  await expect.poll(() => focused(page)).toBe(`conversation-item ${direct.id}`);

  // Leaving the group from its header: its row is gone, the focus is on a row of the list.
  await page.setViewportSize({ width: 1280, height: 800 });
  await openConversation(page, group.id);
  page.once("dialog", (dialog) => void dialog.accept());
  await page.getByTestId("leave-conversation").focus();
  await page.keyboard.press("Enter");
  await expect(conversationItem(page, group.id)).toHaveCount(0);
  await expect.poll(() => focused(page)).toMatch(/^conversation-item \d+$/);

  // Deleted by its creator while alice types in it: the focus goes to the notice's OK, then OK goes to the list.
  await openConversation(page, doomed.id);
  await page.getByTestId("message-input").focus();
  expect((await bob.context.request.delete(`${env.serverA}/api/conversations/${doomed.id}`)).status()).toBe(200);
  await expect(page.getByTestId("gone-notice")).toBeVisible();
  await expect.poll(() => focused(page)).toBe("gone-notice-dismiss");
  await page.keyboard.press("Enter");
  await expect(page.getByTestId("gone-notice")).toHaveCount(0);
  await expect.poll(() => focused(page)).toMatch(/^conversation-item \d+$/);
});

test("unblocking from the list moves the focus to the next person's button; from the note, to the composer", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const direct = await alice.createConversation([bob.name]);
  const page = await alice.openTab(env.serverA);
  // Each block by name asks first, as the Block button does.
  page.on("dialog", (dialog) => void dialog.accept());
  await page.getByTestId("blocked-people").locator("summary").click();
  for (const name of [bob.name, carol.name]) {
    await page.getByTestId("block-name").fill(name);
    // The Block button, pressed from the keyboard: it keeps the focus when the field empties.
    await page.getByTestId("block-name").press("Tab");
    await page.keyboard.press("Enter");
    await expect(page.getByRole("button", { name: `Unblock ${name}` })).toBeVisible();
    await expect.poll(() => focused(page)).not.toBe("body");
  }
  const [first, second] = [bob.name, carol.name].sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()));
  await page.getByRole("button", { name: `Unblock ${first}` }).focus();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("button", { name: `Unblock ${first}` })).toHaveCount(0);
  await expect.poll(() => focused(page)).toBe(`Unblock ${second}`);

  // Bob blocked again; unblocked from the note in place of the composer: the focus is in the composer.
  if (first === bob.name) {
    await page.getByTestId("block-name").fill(bob.name);
    await page.getByTestId("block-name").press("Enter");
  }
  await conversationItem(page, direct.id).click();
  const note = page.getByTestId("blocked-note").getByRole("button", { name: "Unblock" });
  await note.focus();
  await page.keyboard.press("Enter");
  await expect(page.getByTestId("message-input")).toBeVisible();
  await expect.poll(() => focused(page)).toBe("message-input");
});

test("Escape closes the list of blocked people back onto its summary, from its field or from the summary", async ({
  alice,
  env,
}) => {
  const page = await alice.openTab(env.serverA);
  const disclosure = page.getByTestId("blocked-people");
  const summary = disclosure.locator("summary");
  await summary.focus();
  await page.keyboard.press("Enter");
  await expect(disclosure).toHaveJSProperty("open", true);
  await page.getByTestId("block-name").focus();
  await page.keyboard.press("Escape");
  await expect(disclosure).toHaveJSProperty("open", false);
  await expect(page.getByTestId("block-name")).toBeHidden();
  await expect(summary).toBeFocused();

  await page.keyboard.press("Enter");
  await expect(disclosure).toHaveJSProperty("open", true);
  await page.keyboard.press("Escape");
  await expect(disclosure).toHaveJSProperty("open", false);
  await expect(summary).toBeFocused();
});

test("a refused sign-up pressed from the keyboard keeps the focus on its button", async ({ newContext, env }) => {
  const page = await (await newContext()).newPage();
  await page.goto(env.serverA);
  await page.getByTestId("login-mode-sign-up").click();
  await page.getByTestId("login-name").fill(uniqueName("short"));
  await page.getByTestId("login-password").fill("short");
  await page.getByTestId("login-submit").focus();
  await page.keyboard.press("Enter");
  await expect(page.getByTestId("login-error")).toBeVisible();
  expect(await focused(page)).toBe("login-submit");
});

test("on a phone the sign-out options close when the focus Tabs out of them", async ({ alice, env }) => {
  const page = await alice.openTab(env.serverA);
  await page.setViewportSize({ width: 375, height: 740 });
  const more = page.getByTestId("account-more");
  await more.focus();
  await page.keyboard.press("Enter");
  await expect(more).toHaveAttribute("aria-expanded", "true");
  await page.keyboard.press("Tab"); // Sign out
  await page.keyboard.press("Tab"); // Sign out everywhere
  await expect(more).toHaveAttribute("aria-expanded", "true");
  await page.keyboard.press("Tab"); // out
  await expect(more).toHaveAttribute("aria-expanded", "false");
  await expect(page.getByTestId("sign-out-everywhere")).toBeHidden();
});

test("a screen reader is told what the message area is, who is in a group, and when mentions are offered", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await alice.createConversation([bob.name, carol.name], "Named");
  const direct = await alice.createConversation([bob.name]);
  const page = await alice.openTab(env.serverA, { open: group.id });
  await expect(page.getByRole("region", { name: "Messages in Named" })).toBeVisible();
  await expect(page.getByTestId("conversation-members")).toHaveText(/^3 members: /);
  await expect(page.getByTestId("conversation-members")).toHaveAttribute("title", /, /);
  // The line opens the whole list, one name a line, by keyboard too; Escape closes it where it was.
  const list = page.getByRole("list", { name: "3 members" });
  await expect(list).toBeHidden();
  await page.getByTestId("conversation-members").focus();
  await page.keyboard.press("Enter");
  await expect(list.getByRole("listitem")).toHaveCount(3);
  for (const name of [alice.name, bob.name, carol.name]) await expect(list).toContainText(name);
  await page.keyboard.press("Escape");
  await expect(list).toBeHidden();
  await expect(page.getByTestId("conversation-members")).toBeFocused();
  // A tap opens it, a tap elsewhere closes it.
  await page.getByTestId("conversation-members").click();
  await expect(list).toBeVisible();
  await page.getByTestId("message-input").click();
  await expect(list).toBeHidden();

  const status = page.getByTestId("mention-status");
  await expect(status).toHaveText("");
  await page.getByTestId("message-input").fill("hi @");
  await expect(status).toHaveText(/^\d+ people to mention: up and down to choose/);
  await page.getByTestId("message-input").press("Escape");
  await expect(status).toHaveText("");

  await openConversation(page, direct.id);
  await expect(page.getByRole("region", { name: `Messages with ${bob.name}` })).toBeVisible();
  await expect(page.getByTestId("conversation-members")).not.toHaveText(/members:/);
});

test("on a touch screen opening a conversation leaves the composer unfocused: no on-screen keyboard until a tap", async ({
  browser,
  alice,
  bob,
  env,
}) => {
  const direct = await alice.createConversation([bob.name]);
  const phone = await browser.newContext({ hasTouch: true, viewport: { width: 375, height: 740 } });
  try {
    await phone.addCookies(await alice.context.cookies());
    const page = await phone.newPage();
    await page.goto(env.serverA);
    await conversationItem(page, direct.id).tap();
    const input = page.getByTestId("message-input");
    await expect(input).toBeVisible();
    expect(await focused(page)).not.toBe("message-input");
    await input.tap();
    await expect(input).toBeFocused();
  } finally {
    await phone.close();
  }
  // With a mouse, the composer takes the focus at once, ready to type.
  const desk = await alice.openTab(env.serverA);
  await conversationItem(desk, direct.id).click();
  await expect(desk.getByTestId("message-input")).toBeFocused();
});

test("the sign-in and create-account tabs move with the arrow keys, and the error is read on the field at fault", async ({
  newContext,
  env,
}) => {
  const page = await (await newContext()).newPage();
  await page.goto(env.serverA);
  const signIn = page.getByTestId("login-mode-sign-in");
  const signUp = page.getByTestId("login-mode-sign-up");
  await signIn.focus();
  await page.keyboard.press("ArrowRight");
  await expect(signUp).toBeFocused();
  await expect(signUp).toHaveAttribute("aria-selected", "true");
  await expect(page.getByRole("heading", { name: "Create an account" })).toBeAttached();
  await page.keyboard.press("ArrowRight"); // round to the first
  await expect(signIn).toBeFocused();
  await page.keyboard.press("End");
  await expect(signUp).toBeFocused();
  // One Tab stop for the two: the next Tab leaves them for the name field.
  await page.keyboard.press("Tab");
  await expect(page.getByTestId("login-name")).toBeFocused();

  await page.getByTestId("login-name").fill(uniqueName("short"));
  await page.getByTestId("login-password").fill("short");
  await page.getByTestId("login-password").press("Enter");
  await expect(page.getByTestId("login-error")).toBeVisible();
  // The password is too short: it is marked and says why; the name is fine, and keeps only its hint.
  await expect(page.getByTestId("login-password")).toHaveAttribute("aria-describedby", /(^| )login-error$/);
  await expect(page.getByTestId("login-password")).toHaveAttribute("aria-invalid", "true");
  await expect(page.getByTestId("login-name")).toHaveAttribute("aria-describedby", "login-name-hint");
  await expect(page.getByTestId("login-name")).not.toHaveAttribute("aria-invalid");
});

test("a screen reader hears others' messages as they arrive, once each, and a mute or a mark when it is done", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await alice.createConversation([bob.name, carol.name], "Spoken");
  const page = await alice.openTab(env.serverA, { open: group.id });
  const arrivals = page.getByTestId("arrivals");
  await expect(page.getByTestId("message-input")).toBeVisible();
  await expect(arrivals).toHaveText("");
  const bobPage = await bob.openTab(env.serverA, { open: group.id });
  await sendMessage(bobPage, "the map is in my bag");
  await expect(arrivals).toHaveText(`${bob.name}: the map is in my bag`);
  // Her own message is not said again (she just wrote it).
  await sendMessage(page, "great");
  await expect(arrivals).toHaveText(`${bob.name}: the map is in my bag`);
  // The same words twice are said twice: the status is emptied and filled again.
  await arrivals.evaluate((status) => {
    const said: string[] = [];
    (window as unknown as { said: string[] }).said = said;
    new MutationObserver(() => status.textContent && said.push(status.textContent)).observe(status, {
      childList: true,
      characterData: true,
      subtree: true,
    });
  });
  await sendMessage(bobPage, "ok");
  await expect.poll(() => page.evaluate(() => (window as unknown as { said: string[] }).said.length)).toBe(1);
  // The same words again (sendMessage would find two messages of that text).
  await bobPage.getByTestId("message-input").fill("ok");
  await bobPage.getByTestId("message-input").press("Enter");
  await expect(page.getByTestId("message").filter({ hasText: /^.*ok$/ })).toHaveCount(2);
  await expect
    .poll(() => page.evaluate(() => (window as unknown as { said: string[] }).said))
    .toEqual([`${bob.name}: ok`, `${bob.name}: ok`]);
  // The ordered list is no live region of its own: each arrival is said once, by the status.
  await expect(page.getByTestId("message-list").locator("ol")).not.toHaveAttribute("aria-live", /.*/);

  const announcer = page.getByTestId("announcer");
  await conversationItem(page, group.id).focus();
  await page.keyboard.press("Alt+Shift+M");
  await expect(announcer).toHaveText("“Spoken” muted: only its mentions count in the badge.");
  await page.keyboard.press("Alt+Shift+M");
  await expect(announcer).toHaveText("“Spoken” unmuted.");
  await page.keyboard.press("Alt+Shift+U");
  await expect(announcer).toHaveText("“Spoken” marked as unread.");
});
