import { expect, test } from "@playwright/test";
import { BADGE_MISMATCH_BINDING, installBadgeSumCheck } from "./support/browser-scripts.ts";

/*
 * The check every page of every test runs (installBadgeSumCheck, installed by the fixtures) against pages made by
 * hand, so it is proven to pass the muted rule and to catch a badge that breaks it. The plain Playwright `test`:
 * the fixtures' own context would fail this test for the mismatches it provokes on purpose.
 */

const PAGE = "http://badge-check.test/";

function row(id: number, unread: number, muted: boolean, mentions: number): string {
  return `<button data-testid="conversation-item" data-conversation-id="${id}" data-unread="${unread}" data-muted="${muted}" data-mentions="${mentions}"></button>`;
}

test("the badge check takes a muted row's mentions, not its count, and reports a badge that breaks the rule", async ({
  browser,
}) => {
  const context = await browser.newContext();
  const mismatches: { app: number; rows: number }[] = [];
  await context.exposeBinding(BADGE_MISMATCH_BINDING, (_source, sample: { app: number; rows: number }) => {
    mismatches.push({ app: sample.app, rows: sample.rows });
  });
  await context.addInitScript(installBadgeSumCheck);
  await context.route(PAGE, (route) =>
    route.fulfill({
      contentType: "text/html",
      body: `<!doctype html><title>check</title><span data-testid="app-badge" data-count="3"></span>
        ${row(1, 2, false, 0)}${row(2, 5, true, 1)}${row(3, 4, true, 0)}`,
    }),
  );
  const page = await context.newPage();
  await page.goto(PAGE);

  // Negative control: 2 + the muted rows' mentions (1 + 0) is the badge; their counts (5, 4) are not in it. Reports
  // arrive in order, so the first one being the broken state below proves this one passed.
  await page.evaluate(() => document.body.append(document.createElement("p")));

  // Positive controls: the plain sum of the counts is now wrong, and so is forgetting that a row is muted.
  await page.evaluate(() => document.querySelector("[data-testid=app-badge]")?.setAttribute("data-count", "11"));
  await expect.poll(() => mismatches).toEqual([{ app: 11, rows: 3 }]);
  await page.evaluate(() => {
    document.querySelector("[data-testid=app-badge]")?.setAttribute("data-count", "3");
    document.querySelector('[data-conversation-id="3"]')?.setAttribute("data-muted", "false");
  });
  await expect
    .poll(() => mismatches)
    .toEqual([
      { app: 11, rows: 3 },
      { app: 3, rows: 7 },
    ]);

  // The list's end adds what the conversations not listed yet count: 3 rows + 4 there make a badge of 7.
  await page.evaluate(() => {
    document.querySelector('[data-conversation-id="3"]')?.setAttribute("data-muted", "true");
    document.querySelector("[data-testid=app-badge]")?.setAttribute("data-count", "7");
  });
  await expect.poll(() => mismatches).toHaveLength(3);
  await page.evaluate(() => {
    const end = document.createElement("span");
    end.setAttribute("data-testid", "older-unread");
    end.setAttribute("data-unread", "4");
    document.body.append(end);
  });
  // Reports arrive in order: this one (8 ≠ 7) coming next proves the state with the end added passed.
  await page.evaluate(() => document.querySelector("[data-testid=app-badge]")?.setAttribute("data-count", "8"));
  await expect.poll(() => mismatches.slice(3)).toEqual([{ app: 8, rows: 7 }]);
  await context.close();
});
