import { expect, type Locator, type Page } from "@playwright/test";
import { faviconHref } from "../../components/notifications/favicon.ts";
import type { BadgeSample, BadgeSum, TestWindow, WindowState } from "./browser-scripts.ts";

/** Wholly inside the window, and what a click at its middle reaches (nothing drawn over it). */
export async function expectOnScreen(target: Locator): Promise<void> {
  await expect(target).toBeInViewport({ ratio: 1 });
  expect(
    await target.evaluate((el) => {
      const r = el.getBoundingClientRect();
      return el.contains(document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2));
    }),
  ).toBe(true);
}

/**
 * The contrast ratio (WCAG) of the element's text against what is painted behind it: its own background, or the
 * first ancestor's that is not transparent.
 */
export async function contrastRatio(target: Locator): Promise<number> {
  return target.evaluate((el) => {
    const rgb = (color: string) => color.match(/[\d.]+/g)!.map(Number);
    const luminance = (color: string) => {
      const [r, g, b] = rgb(color) as [number, number, number];
      const lin = (c: number) => (c / 255 <= 0.04045 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
      return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    };
    let behind: Element | null = el;
    let background = "rgb(255, 255, 255)";
    for (; behind; behind = behind.parentElement) {
      const color = getComputedStyle(behind).backgroundColor;
      if (rgb(color)[3] !== 0) {
        background = color;
        break;
      }
    }
    const [a, b] = [luminance(getComputedStyle(el).color), luminance(background)].sort((x, y) => y - x);
    return (a! + 0.05) / (b! + 0.05);
  });
}

export function appBadge(page: Page): Locator {
  return page.getByTestId("app-badge");
}

/** The signed-in app (header, list, pane); visible once a tab is signed in and showing the chat. */
export function appShell(page: Page): Locator {
  return page.getByTestId("chat-app");
}

export function conversationItem(page: Page, conversationId: number): Locator {
  return page.locator(`[data-testid="conversation-item"][data-conversation-id="${conversationId}"]`);
}

export function messages(page: Page): Locator {
  return page.getByTestId("message-list").getByTestId("message");
}

/**
 * The total as the user sees it: the header badge (attribute, text, what a screen reader says; at 0 it is out
 * of sight), the tab title and the tab's icon.
 */
export async function expectTotalUnread(page: Page, total: number): Promise<void> {
  const badge = appBadge(page);
  await expect(badge).toHaveAttribute("data-count", String(total));
  await expect(badge).toHaveText(String(total));
  await expect(badge).toHaveAccessibleName(
    total === 0 ? "No unread messages" : `${total} unread ${total === 1 ? "message" : "messages"}`,
  );
  if (total === 0) await expect.poll(async () => (await badge.boundingBox())?.width ?? 0).toBeLessThanOrEqual(1);
  await expect(page).toHaveTitle(total > 0 ? `(${total}) Tally` : "Tally");
  await expect(page.locator('head link[rel~="icon"]').first()).toHaveAttribute("href", faviconHref(total));
}

export async function expectConversationUnread(page: Page, conversationId: number, count: number): Promise<void> {
  const row = conversationItem(page, conversationId);
  await expect(row).toHaveAttribute("data-unread", String(count));
  const badge = row.getByTestId("conversation-badge");
  if (count > 0) await expect(badge).toHaveText(String(count));
  else await expect(badge).toHaveCount(0);
}

/** The conversation's row shows `count`, and the header badge and the title show `total` (by default the same). */
export async function expectUnread(page: Page, conversationId: number, count: number, total = count): Promise<void> {
  await expectConversationUnread(page, conversationId, count);
  await expectTotalUnread(page, total);
}

export function openConversationItem(page: Page): Locator {
  return page.locator('[data-testid="conversation-item"][aria-current="true"]');
}

export async function openConversation(page: Page, conversationId: number): Promise<void> {
  await conversationItem(page, conversationId).click();
  await expectOpen(page, conversationId);
}

export async function expectOpen(page: Page, conversationId: number): Promise<void> {
  await expect(openConversationItem(page)).toHaveAttribute("data-conversation-id", String(conversationId));
  await expect(page.getByTestId("message-list")).toBeVisible();
  await expect(page.getByTestId("message-input")).toBeVisible();
}

/** Sends through the composer (Enter, or the send button) and resolves with the seq the server gave it. */
export async function sendMessage(page: Page, text: string, via: "enter" | "button" = "enter"): Promise<number> {
  const input = page.getByTestId("message-input");
  await input.fill(text);
  if (via === "enter") await input.press("Enter");
  else await page.getByTestId("send-button").click();
  const sent = messages(page).filter({ hasText: text });
  await expect(sent).toHaveAttribute("data-seq", /^[1-9]\d*$/);
  await expect(input).toHaveValue("");
  return Number(await sent.getAttribute("data-seq"));
}

export async function messageSeqs(page: Page): Promise<number[]> {
  return messages(page).evaluateAll((elements) => elements.map((e) => Number(e.getAttribute("data-seq"))));
}

export async function expectMessageSeqs(page: Page, seqs: number[]): Promise<void> {
  await expect.poll(() => messageSeqs(page), { message: "data-seq of the shown messages" }).toEqual(seqs);
}

/**
 * Says whether this tab is the one the user looks at. Applied in the page through the window control installed
 * by the fixtures; bringToFront() as well, so that a real window ordering agrees with the emulated one.
 */
export async function setWindowState(page: Page, state: Partial<WindowState>): Promise<void> {
  if (state.visible === true && state.focused === true) await page.bringToFront();
  await page.evaluate((next) => {
    const control = (window as TestWindow).__tallyWindow;
    if (!control) throw new Error("the window control init script is not installed in this page");
    control.set(next);
  }, state);
}

export const lookAt = (page: Page): Promise<void> => setWindowState(page, { visible: true, focused: true });
/** Another tab of the same window is in front: hidden and unfocused. */
export const hide = (page: Page): Promise<void> => setWindowState(page, { visible: false, focused: false });
/** Still on screen, but another window has the focus. */
export const blur = (page: Page): Promise<void> => setWindowState(page, { visible: true, focused: false });

export async function badgeLog(page: Page): Promise<BadgeSample[]> {
  return page.evaluate(() => [...((window as TestWindow).__tallyBadgeLog ?? [])]);
}

export async function clearBadgeLog(page: Page): Promise<void> {
  await page.evaluate(() => {
    (window as TestWindow).__tallyBadgeLog?.splice(0);
  });
}

/**
 * From now on, after every DOM update (one MutationObserver batch: a React commit), records the app badge next
 * to the sum of the visible rows' counts. The badge log cannot pair them: it sees no row that goes away.
 */
export async function watchBadgeSums(page: Page): Promise<void> {
  await page.evaluate(() => {
    const sums: BadgeSum[] = [];
    (window as TestWindow).__tallyBadgeSums = sums;
    const record = (): void => {
      const badge = document.querySelector("[data-testid=app-badge]");
      if (!badge) return;
      let rows = 0;
      for (const row of document.querySelectorAll("[data-testid=conversation-item]")) {
        // The rule of installBadgeSumCheck: a muted row adds only its mentions.
        const muted = row.getAttribute("data-muted") === "true";
        rows += Number(row.getAttribute(muted ? "data-mentions" : "data-unread") ?? "0");
      }
      const app = Number(badge.getAttribute("data-count"));
      const last = sums.at(-1);
      if (last?.app !== app || last.rows !== rows) sums.push({ app, rows });
    };
    record();
    new MutationObserver(record).observe(document.body, {
      subtree: true,
      childList: true,
      attributes: true,
      attributeFilter: ["data-count", "data-unread", "data-muted", "data-mentions"],
    });
  });
}

/** Every distinct (app badge, Σ rows) pair since watchBadgeSums, in order. */
export async function badgeSums(page: Page): Promise<BadgeSum[]> {
  return page.evaluate(() => [...((window as TestWindow).__tallyBadgeSums ?? [])]);
}

/** The app badge never disagreed with the rows, and took exactly these values in this order. */
export async function expectBadgeSums(page: Page, appValues: number[]): Promise<void> {
  const sums = await badgeSums(page);
  expect(
    sums.filter((s) => s.app !== s.rows),
    "states where the app badge differed from the sum of the visible rows",
  ).toEqual([]);
  expect(
    sums.map((s) => s.app).filter((app, i, all) => i === 0 || all[i - 1] !== app),
    "app badge values",
  ).toEqual(appValues);
}

/** Opens the row menu of a conversation with its button (a click, or the keyboard: focus, then Enter). */
export async function openRowMenu(
  page: Page,
  conversationId: number,
  via: "click" | "keyboard" = "click",
): Promise<Locator> {
  const row = page.locator("li", { has: conversationItem(page, conversationId) });
  const button = row.getByTestId("row-menu-button");
  if (via === "click") await button.click();
  else {
    await button.focus();
    await button.press("Enter");
  }
  const menu = row.getByRole("menu");
  await expect(menu).toBeVisible();
  return menu;
}

/** The row's mute state as the user sees it: data-muted, the muted icon, and the count greyed. */
export async function expectMuted(page: Page, conversationId: number, muted: boolean): Promise<void> {
  const row = conversationItem(page, conversationId);
  await expect(row).toHaveAttribute("data-muted", String(muted));
  await expect(row.getByTestId("muted-icon")).toHaveCount(muted ? 1 : 0);
  const badge = row.getByTestId("conversation-badge");
  if ((await badge.count()) > 0) {
    if (muted) await expect(badge).toHaveClass(/badge-muted/);
    else await expect(badge).not.toHaveClass(/badge-muted/);
  }
}

/** The row's "@" badge: "@" for one mention, "@N" for more, none for 0. */
export async function expectMentions(page: Page, conversationId: number, mentions: number): Promise<void> {
  const row = conversationItem(page, conversationId);
  await expect(row).toHaveAttribute("data-mentions", String(mentions));
  const badge = row.getByTestId("mention-badge");
  if (mentions === 0) await expect(badge).toHaveCount(0);
  else await expect(badge).toHaveText(mentions === 1 ? "@" : `@${mentions}`);
}
