import type { Locator, Page } from "@playwright/test";
import { expect, test } from "./fixtures.ts";
import { messages, openConversation, sendMessage } from "./support/tally-page.ts";

/** Set to a folder to keep screenshots of the states these tests reach (for looking at them, not for asserting). */
const SHOTS = process.env.TALLY_SCREENSHOTS;
async function shot(page: Page, name: string): Promise<void> {
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/${name}.png` });
}

const input = (page: Page) => page.getByTestId("message-input");
const suggestions = (page: Page) => page.getByTestId("mention-suggestions");
const options = (page: Page) => suggestions(page).getByTestId("mention-option");

/** The names the suggestion list offers, in order ([] when it is closed). */
async function offered(page: Page): Promise<string[]> {
  return options(page).evaluateAll((els) => els.map((e) => e.getAttribute("data-name") ?? ""));
}

async function expectOffered(page: Page, names: string[]): Promise<void> {
  await expect(suggestions(page)).toBeVisible();
  await expect.poll(() => offered(page), { message: "names offered" }).toEqual(names);
}

/** The option `i` is the highlighted one, and the textarea points screen readers at it. */
async function expectActive(page: Page, i: number): Promise<void> {
  const option = options(page).nth(i);
  await expect(option).toHaveAttribute("aria-selected", "true");
  await expect(input(page)).toHaveAttribute("aria-activedescendant", (await option.getAttribute("id")) ?? "none");
  await expect(options(page).and(page.locator('[aria-selected="true"]'))).toHaveCount(1);
}

async function caret(page: Page): Promise<{ start: number; end: number; length: number }> {
  return input(page).evaluate((el) => {
    const field = el as HTMLTextAreaElement;
    return { start: field.selectionStart, end: field.selectionEnd, length: field.value.length };
  });
}

const message = (page: Page, text: string): Locator => messages(page).filter({ hasText: text });
const background = (el: Locator): Promise<string> => el.evaluate((e) => getComputedStyle(e).backgroundColor);

test("a mention picked with the keyboard is highlighted for everyone and marked for the one mentioned", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await alice.createConversation([bob.name, carol.name], "launch");
  const alicePage = await alice.openTab(env.serverA, { open: group.id });
  await alicePage.setViewportSize({ width: 1280, height: 800 });
  const bobPage = await bob.openTab(env.serverB);
  const carolPage = await carol.openTab(env.serverA, { open: group.id });
  for (const page of [bobPage, carolPage]) await page.setViewportSize({ width: 1280, height: 800 });

  const earlier = `morning @${alice.name}, can @${bob.name} check the release notes?`;
  await sendMessage(carolPage, earlier);

  // An @ on its own offers every other member (never alice herself), then everyone.
  await input(alicePage).pressSequentially("great, @");
  await expectOffered(alicePage, [bob.name, carol.name, "all", "here"]);
  await expectActive(alicePage, 0);
  await shot(alicePage, "suggestions-1280");
  await alicePage.setViewportSize({ width: 375, height: 740 });
  await expect(suggestions(alicePage)).toBeVisible();
  const box = await suggestions(alicePage).boundingBox();
  expect(box && box.x >= 0 && box.x + box.width <= 375, `the list fits 375 px: ${JSON.stringify(box)}`).toBe(true);
  await shot(alicePage, "suggestions-375");
  await alicePage.setViewportSize({ width: 1280, height: 800 });

  await input(alicePage).press("ArrowDown");
  await expectActive(alicePage, 1);
  await input(alicePage).press("ArrowUp");
  await input(alicePage).press("ArrowUp");
  await expectActive(alicePage, 3);
  await input(alicePage).press("ArrowDown");
  await expectActive(alicePage, 0);

  // The prefix narrows the list, in any case; Enter puts the member's own spelling in, with a space after it.
  await input(alicePage).pressSequentially("B");
  await expectOffered(alicePage, [bob.name]);
  await input(alicePage).press("Enter");
  await expect(input(alicePage)).toHaveValue(`great, @${bob.name} `);
  await expect(suggestions(alicePage)).toBeHidden();
  const picked = `great, @${bob.name} `.length;
  expect(await caret(alicePage)).toEqual({ start: picked, end: picked, length: picked });
  await input(alicePage).pressSequentially("ship it");
  const text = `great, @${bob.name} ship it`;
  await expect(input(alicePage)).toHaveValue(text);
  // With no list open, Enter sends.
  await input(alicePage).press("Enter");
  await expect(message(alicePage, text)).toHaveAttribute("data-seq", "2");
  await expect(input(alicePage)).toHaveValue("");

  // Bob: both mentions of him are marked as his, and so are their bubbles; alice's name in carol's is not his.
  await openConversation(bobPage, group.id);
  const forBob = message(bobPage, text);
  await expect(forBob).toHaveAttribute("data-mentions-me", "true");
  const bobMention = forBob.getByTestId("mention");
  await expect(bobMention).toHaveText(`@${bob.name}`);
  await expect(bobMention).toHaveAttribute("data-mention", bob.name);
  await expect(bobMention).toHaveAttribute("data-me", "true");
  const earlierForBob = message(bobPage, earlier);
  await expect(earlierForBob).toHaveAttribute("data-mentions-me", "true");
  await expect(earlierForBob.getByTestId("mention")).toHaveText([`@${alice.name}`, `@${bob.name}`]);
  const aliceMentionForBob = earlierForBob.getByTestId("mention").first();
  await expect(aliceMentionForBob).not.toHaveAttribute("data-me");
  expect(await background(bobMention)).not.toBe(await background(aliceMentionForBob));
  const reply = `on it — @${carol.name}, can you double-check the changelog?`;
  await sendMessage(bobPage, reply);
  await expect(message(bobPage, reply).getByTestId("mention")).toHaveAttribute("data-mention", carol.name);
  await expect(message(bobPage, reply)).not.toHaveAttribute("data-mentions-me");

  // Carol: the same mention highlighted, but neither it nor the message is hers.
  const forCarol = message(carolPage, text);
  await expect(forCarol.getByTestId("mention")).toHaveAttribute("data-mention", bob.name);
  await expect(forCarol.getByTestId("mention")).not.toHaveAttribute("data-me");
  await expect(forCarol).not.toHaveAttribute("data-mentions-me");
  expect(await background(forCarol.getByTestId("mention"))).toBe(await background(aliceMentionForBob));
  // Her own message mentions others: highlighted, never marked as hers.
  await expect(message(carolPage, earlier).getByTestId("mention")).toHaveCount(2);
  await expect(message(carolPage, earlier)).not.toHaveAttribute("data-mentions-me");
  // Bob's answer mentions her.
  await expect(message(carolPage, reply)).toHaveAttribute("data-mentions-me", "true");
  await expect(message(carolPage, reply).getByTestId("mention")).toHaveAttribute("data-me", "true");
  await shot(carolPage, "mentions-1280");
  await carolPage.setViewportSize({ width: 375, height: 740 });
  await shot(carolPage, "mentions-375");

  // Alice, the sender, sees her mention of bob highlighted; carol's mention of her is marked as hers.
  await expect(message(alicePage, text).getByTestId("mention")).toHaveAttribute("data-mention", bob.name);
  await expect(message(alicePage, text)).not.toHaveAttribute("data-mentions-me");
  await expect(message(alicePage, earlier)).toHaveAttribute("data-mentions-me", "true");
});

test("@all is offered in a group and marks the message for every other member, but not in a direct conversation", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  const group = await alice.createConversation([bob.name, carol.name]);
  const direct = await alice.createConversation([bob.name]);
  const alicePage = await alice.openTab(env.serverA, { open: group.id });
  const bobPage = await bob.openTab(env.serverB);

  // "a" would be alice herself: only the group's "all" is offered. Clicking picks it.
  await input(alicePage).pressSequentially("@a");
  await expectOffered(alicePage, ["all"]);
  await options(alicePage).first().click();
  await expect(input(alicePage)).toHaveValue("@all ");
  await expect(input(alicePage)).toBeFocused();
  await input(alicePage).pressSequentially("standup in 5");
  await input(alicePage).press("Enter");
  const standup = message(alicePage, "@all standup in 5");
  await expect(standup).toHaveAttribute("data-seq", "1");
  await expect(standup.getByTestId("mention")).toHaveAttribute("data-mention", "all");
  await expect(standup).not.toHaveAttribute("data-mentions-me");

  const carolPage = await carol.openTab(env.serverA, { open: group.id });
  await openConversation(bobPage, group.id);
  for (const page of [bobPage, carolPage]) {
    const seen = message(page, "@all standup in 5");
    await expect(seen).toHaveAttribute("data-mentions-me", "true");
    await expect(seen.getByTestId("mention")).toHaveAttribute("data-me", "true");
  }

  // A direct conversation offers the other person only; Escape closes the list and keeps the text.
  await openConversation(alicePage, direct.id);
  await input(alicePage).pressSequentially("@");
  await expectOffered(alicePage, [bob.name]);
  await input(alicePage).press("Escape");
  await expect(suggestions(alicePage)).toBeHidden();
  await expect(input(alicePage)).toHaveValue("@");
  await input(alicePage).press("Backspace");
  // No name starts with "all" here, so no list opens and Enter sends: @all is plain text in a direct conversation.
  await input(alicePage).pressSequentially("@all");
  await expect(suggestions(alicePage)).toBeHidden();
  await input(alicePage).press("Enter");
  await expect(message(alicePage, "@all")).toHaveAttribute("data-seq", "1");
  await openConversation(bobPage, direct.id);
  const plain = message(bobPage, "@all");
  await expect(plain).toHaveAttribute("data-seq", "1");
  await expect(plain.getByTestId("mention")).toHaveCount(0);
  await expect(plain).not.toHaveAttribute("data-mentions-me");
  // And a name still works there.
  await input(alicePage).fill(`ping @${bob.name}!`);
  await input(alicePage).press("Enter");
  await expect(message(bobPage, "ping")).toHaveAttribute("data-mentions-me", "true");
});
