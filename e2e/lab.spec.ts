import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures.ts";
import { expectOnScreen } from "./support/tally-page.ts";

test("the lab runs a small comparison of the four strategies, charts it and replays a story", async ({
  signUp,
  env,
}) => {
  const presenter = await signUp("lab");
  const page = await presenter.context.newPage();
  await page.goto(`${env.serverA}/lab`);
  // A first-time visitor is told where to start.
  await expect(page.getByTestId("lab-start-here")).toContainText("Crash between the writes");

  await page.getByTestId("lab-operations").fill("1500");
  await page.getByTestId("lab-users").fill("10");
  await page.getByTestId("lab-workers").fill("6");
  await page.getByTestId("lab-stepFailureRate").fill("0.05");
  await page.getByTestId("lab-run").click();
  await expect(page.getByTestId("lab-status")).toHaveAttribute("data-status", "finished", { timeout: 60_000 });

  const rows = page.getByTestId("lab-result-row");
  await expect(rows).toHaveCount(4);
  expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-strategy")))).toEqual([
    "naive",
    "lock",
    "watch",
    "lua",
  ]);
  // Named as everywhere else, then what the lab is about (drift, ≠ truth) before the timings, whose milliseconds
  // show three significant figures at most.
  await expect(rows.locator("th")).toHaveText(["naive", "lock", "WATCH", "Lua"]);
  await expect(page.getByTestId("lab-results").locator("thead th")).toHaveText([
    "strategy",
    "drift at the end (users / Σ)",
    "≠ truth (counts / totals)",
    "lost",
    "aborted",
    "ops/s",
    "p50 ms",
    "p99 ms",
    "retries",
    "lock waits",
  ]);
  for (const ms of await rows.locator("[data-testid=lab-result-p50], [data-testid=lab-result-p99]").allInnerTexts())
    expect(ms).toMatch(/^(\d+|\d{2}\.\d|\d\.\d{1,2})$/);
  // The step-failure fault makes the naive strategy drift; Lua never does.
  await expect(rows.and(page.locator('[data-strategy="naive"]'))).not.toHaveAttribute("data-drift", "0");
  await expect(rows.and(page.locator('[data-strategy="lua"]'))).toHaveAttribute("data-drift", "0");

  // One sentence says what the table shows, computed from it.
  const summary = page.getByTestId("lab-summary");
  await expect(summary).toContainText(/^Naive drifted on \d+ users? \(badges off by \d+ in all\)/);
  await expect(summary).toContainText("Lua kept every badge equal to the sum of its conversations");
  // Every column is explained under the table and in its tooltip.
  const legend = page.getByTestId("lab-results-legend");
  for (const term of [
    "aborted",
    "drift at the end (users / Σ)",
    "≠ truth (counts / totals)",
    "retries",
    "lock waits",
    "lost",
  ]) {
    await expect(legend.getByText(term, { exact: true })).toBeVisible();
  }
  await expect(page.getByRole("columnheader", { name: "aborted" })).toHaveAttribute("title", /redelivered/);

  // The live badges: the hot user's badge and the sum of their conversations, per strategy; Lua's agree.
  const badgeRows = page.getByTestId("lab-badge-row");
  await expect(badgeRows).toHaveCount(4);
  const luaBadges = badgeRows.and(page.locator('[data-strategy="lua"]')).getByTestId("lab-badge");
  await expect(luaBadges).toHaveCount(3);
  expect(await luaBadges.evaluateAll((cells) => cells.map((c) => c.getAttribute("data-off")))).toEqual([
    "false",
    "false",
    "false",
  ]);

  // Both charts on one time axis: the same ticks, up to the longest strategy's run.
  const ticks = (chart: string) =>
    page
      .getByTestId(chart)
      .locator(".recharts-xAxis-tick-labels .recharts-cartesian-axis-tick-value")
      .allTextContents();
  const throughputTicks = await ticks("lab-chart-throughput");
  expect(throughputTicks[0]).toBe("0 s");
  expect(throughputTicks.length).toBeGreaterThan(1);
  expect(await ticks("lab-chart-drift")).toEqual(throughputTicks);
  await expect(page.getByTestId("lab-chart-axis")).toContainText(`0–${throughputTicks.at(-1)}`);

  for (const chart of ["lab-chart-throughput", "lab-chart-drift"]) {
    await expect(page.getByTestId(chart)).toBeVisible();
    // One drawn line per strategy, named in the legend in the order the form and the table list them.
    await expect(page.getByTestId(chart).locator("path.recharts-line-curve")).toHaveCount(4);
    await expect(page.getByTestId(chart).locator(".recharts-legend-item-text")).toHaveText([
      "naive",
      "lock",
      "WATCH",
      "Lua",
    ]);
  }

  await page.getByTestId("lab-story-race").click();
  const columns = page.getByTestId("lab-story-column");
  await expect(columns).toHaveCount(4, { timeout: 30_000 });
  const next = page.getByTestId("lab-story-next");
  await expect(page.getByTestId("lab-story-prev")).toBeDisabled();
  await next.click();
  await expect(page.getByTestId("lab-story-prev")).toBeEnabled();
  await page.getByRole("button", { name: "To the end" }).click();
  // The last step: nowhere further to go.
  await expect(next).toBeDisabled();
  await expect(page.getByRole("button", { name: "To the end" })).toBeDisabled();
  await page.getByTestId("lab-story-prev").click();
  await expect(next).toBeEnabled();
  await next.click();
  await expect(next).toBeDisabled();
  const naive = columns.and(page.locator('[data-strategy="naive"]'));
  await expect(naive.getByTestId("lab-story-badge")).toHaveText("1");
  await expect(naive.getByTestId("lab-story-list")).toHaveText("0");
  await expect(columns.and(page.locator('[data-strategy="lua"]')).getByTestId("lab-story-verdict")).toContainText(
    "badge = list = truth",
  );

  // A mute racing a send: naive's badge keeps counting the muted conversation; Lua leaves it out.
  await page.getByTestId("lab-story-mute").click();
  await expect(page.getByTestId("lab-story-position")).toHaveText(/^step 1 \//);
  // The story replayed is marked, and its steps are a row of their own: "← Back" never sits beside a story's name.
  await expect(page.getByTestId("lab-story-mute")).toHaveAttribute("aria-pressed", "true");
  await expect(page.getByTestId("lab-story-race")).toHaveAttribute("aria-pressed", "false");
  const storyBox = (await page.getByTestId("lab-story-mute").boundingBox())!;
  expect((await page.getByTestId("lab-story-prev").boundingBox())!.y).toBeGreaterThanOrEqual(
    storyBox.y + storyBox.height,
  );
  await page.getByRole("button", { name: "To the end" }).click();
  await expect(naive.getByTestId("lab-story-muted")).toBeVisible();
  await expect(naive.getByTestId("lab-story-list")).toHaveText("3");
  await expect(naive.getByTestId("lab-story-badge")).toHaveText("1");
  await expect(naive.getByTestId("lab-story-verdict")).toContainText("badge counts a muted conversation");
  const lua = columns.and(page.locator('[data-strategy="lua"]'));
  await expect(lua.getByTestId("lab-story-badge")).toHaveText("0");
  await expect(lua.getByTestId("lab-story-verdict")).toContainText("badge = unmuted list = truth");
  await expect(lua.getByTestId("lab-story-verdict")).toContainText("(truth: list 3, badge 0)");
});

test("the lab explains its words and fills the fault fields from a preset", async ({ signUp, env }) => {
  const presenter = await signUp("lab_words");
  const page = await presenter.context.newPage();
  await page.goto(`${env.serverA}/lab`);

  // The glossary opens from the keyboard and names every piece of jargon.
  const glossary = page.getByTestId("lab-glossary");
  await glossary.locator("summary").focus();
  await page.keyboard.press("Enter");
  await expect(glossary).toHaveAttribute("open", "");
  for (const term of [
    "lock (SET NX PX)",
    "WATCH / MULTI",
    "max-register",
    "hot user",
    "drift",
    "truth",
    "redelivery",
  ]) {
    await expect(glossary.getByText(term, { exact: true })).toBeVisible();
  }
  await expect(glossary.getByText("drift at the end (users / Σ)", { exact: true })).toBeVisible();
  await expect(page.getByTestId("lab-hotUserShare")).toHaveAttribute("aria-description", /User 1/);

  await expect(page.getByTestId("lab-preset-none")).toHaveAttribute("aria-pressed", "true");
  await page.getByTestId("lab-preset-crash").click();
  await expect(page.getByTestId("lab-stepFailureRate")).toHaveValue("0.03");
  await expect(page.getByTestId("lab-workerDeathRate")).toHaveValue("0.002");
  await expect(page.getByTestId("lab-stepDelayMs")).toHaveValue("0");
  await expect(page.getByTestId("lab-preset-crash")).toHaveAttribute("aria-pressed", "true");
  await expect(page.getByTestId("lab-preset-none")).toHaveAttribute("aria-pressed", "false");

  await page.getByTestId("lab-preset-slow").click();
  await expect(page.getByTestId("lab-stepFailureRate")).toHaveValue("0");
  await expect(page.getByTestId("lab-stepDelayMs")).toHaveValue("5");

  await page.getByTestId("lab-preset-everything").click();
  await expect(page.getByTestId("lab-stepFailureRate")).toHaveValue("0.03");
  await expect(page.getByTestId("lab-stepDelayMs")).toHaveValue("5");
  await expect(page.getByTestId("lab-redisRestart")).toBeChecked();

  // A field changed by hand is no preset any more; "none" clears every fault.
  await page.getByTestId("lab-stepDelayMs").fill("7");
  await expect(page.locator('.lab-preset[aria-pressed="true"]')).toHaveCount(0);
  await page.getByTestId("lab-preset-none").click();
  await expect(page.getByTestId("lab-stepDelayMs")).toHaveValue("0");
  await expect(page.getByTestId("lab-workerDeathRate")).toHaveValue("0");
  await expect(page.getByTestId("lab-redisRestart")).not.toBeChecked();
});

test("the lab fits a 375 px wide phone: nothing overflows sideways, the header is whole", async ({ signUp, env }) => {
  const presenter = await signUp("lab_phone");
  const page = await presenter.context.newPage();
  await page.setViewportSize({ width: 375, height: 740 });
  await page.goto(`${env.serverA}/lab`);
  await page.getByTestId("lab-glossary").locator("summary").click();

  await page.getByTestId("lab-operations").fill("200");
  await page.getByTestId("lab-users").fill("5");
  await page.getByTestId("lab-workers").fill("3");
  await page.getByTestId("lab-run").click();
  await expect(page.getByTestId("lab-status")).toHaveAttribute("data-status", "finished", { timeout: 60_000 });
  await expect(page.getByTestId("lab-summary")).toBeVisible();
  // One card a strategy: every figure of it on screen at once with its column's name, none scrolled off to the
  // side, none covered.
  const cards = page.getByTestId("lab-result-row");
  await expect(cards).toHaveCount(4);
  for (const card of await cards.all()) {
    await card.scrollIntoViewIfNeeded();
    const cells = card.locator("th, td");
    await expect(cells).toHaveCount(10);
    for (const cell of await cells.all()) await expectOnScreen(cell);
    await expect(card.getByTestId("lab-result-drift")).toHaveAttribute("data-label", "drift at the end (users / Σ)");
  }
  // Still a table to a screen reader: its column headings and each row's strategy name the figures.
  const table = page.getByTestId("lab-results");
  await expect(table).toHaveRole("table");
  await expect(table.getByRole("columnheader")).toHaveCount(10);
  await expect(table.getByRole("rowheader")).toHaveText(["naive", "lock", "WATCH", "Lua"]);
  await expect(table.getByRole("cell")).toHaveCount(36);
  await page.getByTestId("lab-story-crash").click();
  await expect(page.getByTestId("lab-story-column")).toHaveCount(4, { timeout: 30_000 });
  await page.getByRole("button", { name: "To the end" }).click();

  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
  // The header's title and link are shown whole, inside the screen.
  const header = page.getByTestId("lab-header");
  for (const part of [header.getByRole("heading", { name: "Tally · Consistency lab" }), header.getByRole("link")]) {
    const box = (await part.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(375);
    expect(await part.evaluate((el) => el.scrollWidth <= el.clientWidth && el.scrollHeight <= el.clientHeight)).toBe(
      true,
    );
  }
});

test("the lab asks anonymous visitors to sign in", async ({ newContext, env }) => {
  const context = await newContext();
  const page = await context.newPage();
  await page.goto(`${env.serverA}/lab`);
  await expect(page.getByTestId("lab-signed-out")).toBeVisible();
});

test("a run holds the server's one slot: another user waits for it and watches it, a second tab of its owner draws it from its start", async ({
  signUp,
  env,
}) => {
  // Four lab pages draw one run's charts at once, beside the run, the servers and PostgreSQL on two cores.
  test.slow();
  const alice = await signUp("lab_owner");
  const bob = await signUp("lab_waiter");
  // An idle tab of the owner's, with an edit it has not run: the run started elsewhere does not make it lose it.
  const idle = await alice.context.newPage();
  await idle.goto(`${env.serverA}/lab`);
  await idle.getByTestId("lab-users").fill("7");
  const page = await alice.context.newPage();
  await page.goto(`${env.serverA}/lab`);
  await page.getByTestId("lab-strategy-watch").uncheck();
  await page.getByTestId("lab-strategy-lua").uncheck();
  // Long enough to be stopped: every step of every operation waits 5 ms.
  await page.getByTestId("lab-operations").fill("200000");
  await page.getByTestId("lab-stepDelayMs").fill("5");
  await page.getByTestId("lab-stepDelayRate").fill("1");
  await page.getByTestId("lab-run").click();
  await expect(page.getByTestId("lab-status")).toHaveAttribute("data-status", "running");

  // Someone else's page is told the slot is taken, and cannot start one or stop this one; it watches it (a
  // workshop's attendees, the presenter's run), its own form left alone, without being told whose it is.
  const bobPage = await bob.context.newPage();
  await bobPage.goto(`${env.serverA}/lab`);
  await expect(bobPage.getByTestId("lab-waiting")).toHaveText(
    "Someone else's run is going on this server (one at a time), drawn below; Run is back when it ends.",
  );
  await expect(bobPage.getByTestId("lab-run")).toBeDisabled();
  await expect(bobPage.getByTestId("lab-stop")).toHaveCount(0);
  await expect(bobPage.getByTestId("lab-status")).toHaveAttribute("data-status", "watching");
  await expect(bobPage.getByTestId("lab-operations")).not.toHaveValue("200000");
  // The charts say they are someone else's run, and its settings (the form is the watcher's own).
  await expect(bobPage.getByTestId("lab-watched")).toHaveText(
    /^Someone else's run: 200000 operations per strategy \(naive, lock\) .*5 ms between the steps on 100%/,
  );
  await expect(bobPage.locator("body")).not.toContainText(alice.name);
  await expect(page.getByTestId("lab-watched")).toHaveCount(0);

  // The points of naive's drift line as a tab draws it (a curve: three points a sample after the first).
  const points = async (tab: Page) =>
    (
      await tab.getByTestId("lab-chart-drift").locator(".lab-line-naive path.recharts-line-curve").getAttribute("d")
    )?.match(/[\d.]+,[\d.]+/g)?.length ?? 0;
  await expect.poll(() => points(page), { timeout: 30_000 }).toBeGreaterThan(20);
  await expect.poll(() => points(bobPage)).toBeGreaterThan(20);

  // A second tab of the owner, opened mid-run: the run's settings, Stop, and the line drawn so far.
  const before = await points(page);
  const second = await alice.context.newPage();
  await second.goto(`${env.serverA}/lab`);
  await expect(second.getByTestId("lab-status")).toHaveAttribute("data-status", "running");
  await expect(second.getByTestId("lab-operations")).toHaveValue("200000");
  await expect(second.getByTestId("lab-strategy-lua")).not.toBeChecked();
  await expect(second.getByTestId("lab-stop")).toBeVisible();
  // Drawn from the run's start, not from when the tab opened (the server kept the samples of the first seconds): at
  // least as many points as the first tab had drawn before the second opened, however fast each tab draws.
  await expect.poll(() => points(second)).toBeGreaterThanOrEqual(before);

  // The idle tab shows the run's settings while it goes, and says where its own went.
  await expect(idle.getByTestId("lab-operations")).toHaveValue("200000");
  await expect(idle.getByTestId("lab-draft-kept")).toBeVisible();

  await second.getByTestId("lab-stop").click();
  for (const tab of [page, second, idle]) {
    await expect(tab.getByTestId("lab-status")).toHaveAttribute("data-status", "stopped", { timeout: 30_000 });
    // The end of a stopped run is said as such, with the strategies it never reached.
    await expect(tab.getByTestId("lab-summary-when")).toHaveText(
      "When it was stopped, once the operations under way had finished:",
    );
    await expect(tab.getByTestId("lab-ended-early")).toContainText("Lock did not run.");
  }
  // The idle tab's edit is back, over its own settings (not the run's); the others keep the run's.
  await expect(idle.getByTestId("lab-users")).toHaveValue("7");
  await expect(idle.getByTestId("lab-operations")).not.toHaveValue("200000");
  await expect(idle.getByTestId("lab-strategy-lua")).toBeChecked();
  await expect(idle.getByTestId("lab-draft-kept")).toHaveCount(0);
  await expect(second.getByTestId("lab-operations")).toHaveValue("200000");
  // The watcher saw it end too, and says they are not its own results.
  await expect(bobPage.getByTestId("lab-status")).toHaveAttribute("data-status", "stopped");
  await expect(bobPage.getByTestId("lab-status")).toHaveText("someone else's run stopped by its owner");
  await expect(bobPage.getByTestId("lab-results-title")).toHaveText("Results of someone else's run");
  await expect(page.getByTestId("lab-results-title")).toHaveText("Results");
  // The slot is free: the other user's Run is back.
  await expect(bobPage.getByTestId("lab-waiting")).toHaveCount(0);
  await expect(bobPage.getByTestId("lab-run")).toBeEnabled();

  // Over the page's own results (which the server does not keep), the next run of someone else's is offered, not
  // taken up; Watch takes it up.
  await bobPage.getByTestId("lab-operations").fill("50");
  await bobPage.getByTestId("lab-run").click();
  await expect(bobPage.getByTestId("lab-status")).toHaveAttribute("data-status", "finished", { timeout: 30_000 });
  await expect(bobPage.getByTestId("lab-results-title")).toHaveText("Results");
  await page.getByTestId("lab-run").click();
  await expect(page.getByTestId("lab-status")).toHaveAttribute("data-status", "running");
  await expect(bobPage.getByTestId("lab-watch")).toBeVisible();
  await expect(bobPage.getByTestId("lab-status")).toHaveAttribute("data-status", "finished");
  await expect(bobPage.getByTestId("lab-results-title")).toHaveText("Results");
  await bobPage.getByTestId("lab-watch").click();
  await expect(bobPage.getByTestId("lab-status")).toHaveAttribute("data-status", "watching");
  await expect(bobPage.getByTestId("lab-watch")).toHaveCount(0);
  await expect.poll(() => points(bobPage)).toBeGreaterThan(3);
  await page.getByTestId("lab-stop").click();
  await expect(bobPage.getByTestId("lab-status")).toHaveAttribute("data-status", "stopped", { timeout: 30_000 });
});
