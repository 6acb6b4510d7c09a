import type { Locator } from "@playwright/test";
import { expect, test } from "./fixtures.ts";
import { contrastRatio, expectOnScreen } from "./support/tally-page.ts";

// What a presenter meets on stage: fields typed into by hand, a projector's screen, a clicker.

test("a lab number field typed into after its 0, or cleared and retyped, shows the number without a leading 0", async ({
  signUp,
  env,
}) => {
  const presenter = await signUp("lab_fields");
  const page = await presenter.context.newPage();
  await page.goto(`${env.serverA}/lab`);

  // Typed after the 0 it showed, as a presenter clicking at the end of the field does.
  const delay = page.getByTestId("lab-stepDelayMs");
  await expect(delay).toHaveValue("0");
  await delay.click();
  await page.keyboard.press("End");
  await page.keyboard.type("2000");
  await expect(delay).toHaveValue("2000");

  // Cleared, then retyped: the field stays empty in between, it does not refill itself with a 0.
  const operations = page.getByTestId("lab-operations");
  await operations.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Backspace");
  await expect(operations).toHaveValue("");
  await page.keyboard.type("2000");
  await expect(operations).toHaveValue("2000");
  // Left empty, it shows the 0 it counts as.
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Backspace");
  await page.keyboard.press("Tab");
  await expect(operations).toHaveValue("0");

  // A fraction is typed as it reads, and a preset still fills the fields.
  const share = page.getByTestId("lab-stepDelayRate");
  await share.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.type("0.25");
  await expect(share).toHaveValue("0.25");
  await page.getByTestId("lab-preset-slow").click();
  await expect(delay).toHaveValue("5");
});

test("Run and Stop are on screen without scrolling on a 1280×720 projector and a 375 px phone, and stay there", async ({
  signUp,
  env,
}) => {
  const presenter = await signUp("lab_fold");
  const page = await presenter.context.newPage();
  const run = page.getByTestId("lab-run");
  const stop = page.getByTestId("lab-stop");

  for (const [width, height] of [
    [1280, 720],
    [375, 740],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.goto(`${env.serverA}/lab`);
    await expect(page.getByTestId("lab-operations")).toBeEnabled();
    expect(await page.evaluate(() => window.scrollY)).toBe(0);
    await expectOnScreen(run);

    // A run long enough to be stopped: Stop appears where Run is, and stays on screen while the charts are watched.
    await page.getByTestId("lab-operations").fill("1000000");
    await page.getByTestId("lab-stepDelayMs").fill("5");
    await page.getByTestId("lab-stepDelayRate").fill("1");
    await page.evaluate(() => window.scrollTo(0, 0));
    await run.click();
    await expectOnScreen(stop);
    await page.getByTestId("lab-chart-drift").scrollIntoViewIfNeeded();
    await expectOnScreen(stop);
    await stop.click();
    await expect(page.getByTestId("lab-status")).toHaveAttribute("data-status", "stopped", { timeout: 30_000 });
    await expectOnScreen(run);
  }
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
});

test("a story steps with a clicker's keys or the arrows, and each step lands on screen", async ({ signUp, env }) => {
  const presenter = await signUp("lab_clicker");
  const page = await presenter.context.newPage();
  const position = page.getByTestId("lab-story-position");
  const naive = page.getByTestId("lab-story-column").and(page.locator('[data-strategy="naive"]'));
  // What the step added in the first column: its newest step, or its verdict once it has none left.
  const newest = naive.locator("[data-current]");

  await page.setViewportSize({ width: 1280, height: 720 });
  await page.goto(`${env.serverA}/lab`);
  await page.getByTestId("lab-story-race").click();
  await expect(page.getByTestId("lab-story-column")).toHaveCount(4, { timeout: 30_000 });
  await expect(position).toHaveText(/^step 1 \/ \d+$/);
  const steps = Number((await position.textContent())!.split("/")[1]);
  expect(steps).toBeGreaterThan(5);

  // Focus on the page (a click on the story's text, not on a control), the story on screen: PageDown and → step
  // forward, every step in view; PageUp and ← step back.
  await page.locator(".lab-story .lab-lead").click();
  await expect(page.locator("body")).toBeFocused();
  for (let step = 2; step <= steps; step++) {
    await page.keyboard.press(step % 2 === 0 ? "PageDown" : "ArrowRight");
    await expect(position).toHaveText(`step ${step} / ${steps}`);
    await expect(newest).toBeInViewport({ ratio: 1 });
  }
  await expect(naive.getByTestId("lab-story-verdict")).toBeInViewport({ ratio: 1 });
  await page.keyboard.press("PageUp");
  await page.keyboard.press("ArrowLeft");
  await expect(position).toHaveText(`step ${steps - 2} / ${steps}`);
  await expect(newest).toBeInViewport({ ratio: 1 });

  // "Next step" pressed with Enter up to the last step keeps the focus (it is not disabled out from under it), so
  // the keys still step: the focus does not fall to the page and then, with the next Tab, into a form field.
  const next = page.getByTestId("lab-story-next");
  await next.focus();
  await page.keyboard.press("Enter");
  await page.keyboard.press("Enter");
  await expect(position).toHaveText(`step ${steps} / ${steps}`);
  await expect(next).toHaveAttribute("aria-disabled", "true");
  await page.keyboard.press("Enter");
  await expect(position).toHaveText(`step ${steps} / ${steps}`);
  await expect(next).toBeFocused();
  await page.keyboard.press("ArrowLeft");
  await expect(position).toHaveText(`step ${steps - 1} / ${steps}`);

  // In a form field the keys are the field's: the story does not move.
  const seed = page.getByTestId("lab-seed");
  await seed.click();
  await page.keyboard.press("ArrowRight");
  await page.keyboard.press("PageDown");
  await page.keyboard.press("ArrowLeft");
  await expect(seed).toBeFocused();
  await expect(position).toHaveText(`step ${steps - 1} / ${steps}`);

  // Scrolled back to the form, the story out of view: the keys are the page's again, PageDown scrolls it.
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  // The field's PageDown scrolled the page, smoothly: under load that scroll can still be going, and carry the page
  // back down past a scrollTo. Back to the top until the page stays there.
  await expect
    .poll(() =>
      page.evaluate(async () => {
        window.scrollTo(0, 0);
        await new Promise((frame) => requestAnimationFrame(() => requestAnimationFrame(frame)));
        return window.scrollY;
      }),
    )
    .toBe(0);
  // Whether the page's own PageDown was left alone (a listener after the story's, on the same window, sees it): how
  // far the browser then scrolls is the browser's business, and under load it can be late.
  await page.evaluate(() =>
    window.addEventListener("keydown", (event) => {
      document.body.dataset.lastKeyPrevented = String(event.defaultPrevented);
    }),
  );
  await page.keyboard.press("PageDown");
  await expect(page.locator("body")).toHaveAttribute("data-last-key-prevented", "false");
  await expect(position).toHaveText(`step ${steps - 1} / ${steps}`);
  await expect(page.getByTestId("lab-story-next")).not.toBeInViewport();
  // Another control focused (Run), with the story on screen: its keys are its own.
  await position.scrollIntoViewIfNeeded();
  const run = page.getByTestId("lab-run");
  await run.evaluate((el) => el.focus({ preventScroll: true }));
  await expect(position).toBeInViewport();
  for (const key of ["ArrowRight", "PageDown"]) await page.keyboard.press(key);
  await expect(run).toBeFocused();
  // Then one step from the button, after those keys: had any of them stepped, it would show another step.
  await page.getByTestId("lab-story-prev").dispatchEvent("click");
  await expect(position).toHaveText(`step ${steps - 2} / ${steps}`);
});

/** Wholly inside the window and drawn over by nothing (no sticky bar): its middle and its top edge reach it. */
async function uncovered(target: Locator): Promise<boolean> {
  return target.evaluate((el) => {
    const r = el.getBoundingClientRect();
    if (r.top < 0 || r.left < 0 || r.bottom > window.innerHeight || r.right > window.innerWidth) return false;
    const x = r.x + r.width / 2;
    return [r.y + r.height / 2, r.y + 2].every((y) => el.contains(document.elementFromPoint(x, y)));
  });
}

test("a story's steps bar, and each column's name and figures, stay on screen above its newest step", async ({
  signUp,
  env,
}) => {
  const presenter = await signUp("lab_sticky");
  const page = await presenter.context.newPage();
  const position = page.getByTestId("lab-story-position");
  const next = page.getByTestId("lab-story-next");
  const columns = page.getByTestId("lab-story-column");

  // A projector (the columns side by side), then a phone (the columns stacked, one under another).
  for (const [width, height, scenario] of [
    [1280, 720, "race"],
    [375, 667, "crash"],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.goto(`${env.serverA}/lab`);
    await page.getByTestId(`lab-story-${scenario}`).click();
    await expect(columns).toHaveCount(4, { timeout: 30_000 });
    await expect(position).toHaveText(/^step 1 \/ \d+$/);
    const steps = Number((await position.textContent())!.split("/")[1]);
    const lengths = await columns.evaluateAll((cs) => cs.map((c) => Number(c.getAttribute("data-steps"))));
    for (let step = 2; step <= steps; step++) {
      // Pressed where it is, as a mouse or a thumb does: no scrolling to it first.
      await next.dispatchEvent("click");
      await expect(position).toHaveText(`step ${step} / ${steps}`);
      await expect.poll(() => uncovered(next), `Next at step ${step}, ${width} px`).toBe(true);
      await expect.poll(() => uncovered(position)).toBe(true);
      // What this step changed: the newest step (or verdict) of the first column that still moves (on a phone, not
      // the finished column above it), below the sticky bar and head, under its column's name and figures.
      const moved = columns.nth(lengths.findIndex((length) => length >= step));
      await expect.poll(() => uncovered(moved.locator("[data-current]")), `step ${step}, ${width} px`).toBe(true);
      const shown = width > 900 ? [0, 1, 2, 3].map((i) => columns.nth(i)) : [moved];
      for (const column of shown) {
        await expect.poll(() => uncovered(column.getByRole("heading"))).toBe(true);
        await expect.poll(() => uncovered(column.getByTestId("lab-story-badge"))).toBe(true);
        await expect.poll(() => uncovered(column.getByTestId("lab-story-list"))).toBe(true);
      }
    }
  }
});

test("the lab says which drift is sampled live and which is at the end, and a drift of 0 draws above the axis", async ({
  signUp,
  env,
}) => {
  const presenter = await signUp("lab_drift");
  const page = await presenter.context.newPage();
  await page.setViewportSize({ width: 1280, height: 720 });
  await page.goto(`${env.serverA}/lab`);
  await page.getByTestId("lab-operations").fill("300");
  await page.getByTestId("lab-users").fill("5");
  await page.getByTestId("lab-workers").fill("4");
  await page.getByTestId("lab-preset-crash").click();
  // Every operation waits 5 ms between its steps: each strategy runs ≥ 375 ms however fast the machine, so each
  // draws a line of several samples.
  await page.getByTestId("lab-stepDelayMs").fill("5");
  await page.getByTestId("lab-stepDelayRate").fill("1");
  await page.getByTestId("lab-run").click();
  await expect(page.getByTestId("lab-status")).toHaveAttribute("data-status", "finished", { timeout: 60_000 });

  // The chart is live samples, operations in flight included; the table and its sentence are the end state.
  const drift = page.getByTestId("lab-chart-drift");
  await expect(drift.locator("figcaption")).toHaveText(/^Drift sampled live/);
  await expect(page.getByTestId("lab-chart-live")).toContainText("results table reports drift at the end");
  await expect(page.getByRole("columnheader", { name: "drift at the end (users / Σ)" })).toBeVisible();
  await expect(page.getByTestId("lab-summary-when")).toHaveText("At the end, once every operation finished:");

  // Side by side, the two charts' time axes are at one height, whatever their captions' lengths.
  const axisTop = (chart: string) =>
    page
      .getByTestId(chart)
      .locator(".recharts-xAxis line.recharts-cartesian-axis-line")
      .evaluate((el) => el.getBoundingClientRect().top);
  expect(await axisTop("lab-chart-drift")).toBe(await axisTop("lab-chart-throughput"));

  // Lua never drifts: its line is drawn at 0, and 0 sits above the time axis, not on it.
  await expect(page.getByTestId("lab-result-row").and(page.locator('[data-strategy="lua"]'))).toHaveAttribute(
    "data-drift",
    "0",
  );
  // Read from the SVG's own coordinates (the path's points, the axis line's y), not from stroked boxes.
  const luaYs = [
    ...(await drift.locator(".lab-line-lua path.recharts-line-curve").getAttribute("d"))!.matchAll(/[\d.]+,([\d.]+)/g),
  ].map((m) => Number(m[1]));
  const axisY = Number(await drift.locator(".recharts-xAxis line.recharts-cartesian-axis-line").getAttribute("y1"));
  expect(luaYs.length).toBeGreaterThan(1);
  expect(new Set(luaYs).size).toBe(1);
  expect(axisY - luaYs[0]!).toBeGreaterThanOrEqual(6);
});

test("a live badge, agreeing or not, reads at WCAG AA contrast (4.5:1) in light and dark mode", async ({
  signUp,
  env,
}) => {
  const presenter = await signUp("lab_contrast");
  const page = await presenter.context.newPage();
  await page.goto(`${env.serverA}/lab`);
  await expect(page.getByTestId("lab-badges")).toBeVisible();
  for (const [colorScheme, className] of [
    ["light", "lab-badge-pill off"],
    ["dark", "lab-badge-pill off"],
    ["light", "lab-badge-pill"],
    ["dark", "lab-badge-pill"],
  ] as const) {
    await page.emulateMedia({ colorScheme });
    // The pill as the live badges table draws one (no run needed to style it): "off" disagrees with its sum.
    await page.getByTestId("lab-badges").evaluate((table, name) => {
      const pill = document.createElement("span");
      pill.className = name;
      pill.dataset.testid = "contrast-probe";
      pill.textContent = "16";
      table.querySelector("td, th")!.append(pill);
    }, className);
    const ratio = await contrastRatio(page.getByTestId("contrast-probe"));
    await page.getByTestId("contrast-probe").evaluate((pill) => pill.remove());
    expect(ratio, `${className}, ${colorScheme} mode`).toBeGreaterThanOrEqual(4.5);
  }
});

test("a story asked for while the lab's socket is still connecting waits for it instead of failing", async ({
  signUp,
  env,
}) => {
  const presenter = await signUp("lab_early");
  const page = await presenter.context.newPage();
  // The lab's socket reaches the server only once the click is made (seen in CI: a click right after the page
  // loaded answered "No answer from the server." at once).
  let letThrough!: () => void;
  const clicked = new Promise<void>((resolve) => (letThrough = resolve));
  await page.routeWebSocket(/\/socket\.io\//, async (ws) => {
    await clicked;
    ws.connectToServer();
  });
  await page.goto(`${env.serverA}/lab`);
  await page.getByTestId("lab-story-race").click();
  letThrough();
  await expect(page.getByTestId("lab-story-column")).toHaveCount(4, { timeout: 30_000 });
  await expect(page.getByTestId("lab-story-position")).toHaveText(/^step 1 \/ \d+$/);
});

test("the sticky run bar covers neither a field the keyboard focuses nor the charts Run brings into view", async ({
  signUp,
  env,
}) => {
  const presenter = await signUp("lab_runbar");
  const page = await presenter.context.newPage();
  const focused = page.locator(":focus");

  // 1280×720 at 150 % zoom (853×480 CSS px), a 1280×720 projector minus the browser's bars, a phone: Tab from the
  // top of the page to Run, and every control focused on the way shows clear of the bar (top or bottom).
  for (const [width, height] of [
    [853, 480],
    [1280, 633],
    [375, 667],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.goto(`${env.serverA}/lab`);
    await expect(page.getByTestId("lab-operations")).toBeEnabled();
    let checked = 0;
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press("Tab");
      const where = await focused.evaluate((el) =>
        el.closest(".lab-runbar") ? "bar" : el.closest(".lab-run-section") ? "section" : "elsewhere",
      );
      if (where === "bar") break;
      if (where === "elsewhere") continue;
      checked++;
      const name = await focused.evaluate((el) => el.getAttribute("data-testid") ?? el.textContent);
      await expect.poll(() => uncovered(focused), `${name} at ${width}×${height}`).toBe(true);
    }
    await expect(page.getByTestId("lab-run")).toBeFocused();
    expect(checked).toBeGreaterThan(15);
  }

  // Run pressed at 1280×720, where the charts start below the window: they come into view, just under the bar.
  await page.setViewportSize({ width: 1280, height: 720 });
  await page.goto(`${env.serverA}/lab`);
  await page.getByTestId("lab-operations").fill("300");
  await page.getByTestId("lab-users").fill("5");
  await expect(page.getByTestId("lab-live")).not.toBeInViewport();
  await page.getByTestId("lab-run").click();
  for (const caption of await page.getByTestId("lab-live").locator("figcaption").all())
    await expect.poll(() => uncovered(caption)).toBe(true);
  await expect(page.getByTestId("lab-status")).toHaveAttribute("data-status", "finished", { timeout: 60_000 });
  await expect.poll(() => uncovered(page.getByTestId("lab-run"))).toBe(true);
});

test("Run pressed from the keyboard keeps the focus, and Stop's focus goes back to Run when the run ends", async ({
  signUp,
  env,
}) => {
  const presenter = await signUp("lab_keys_run");
  const page = await presenter.context.newPage();
  await page.goto(`${env.serverA}/lab`);
  const run = page.getByTestId("lab-run");
  const stop = page.getByTestId("lab-stop");
  // Long enough to be stopped: every step of every operation waits 5 ms.
  await page.getByTestId("lab-operations").fill("1000000");
  await page.getByTestId("lab-stepDelayMs").fill("5");
  await page.getByTestId("lab-stepDelayRate").fill("1");

  await run.focus();
  await page.keyboard.press("Enter");
  await expect(page.getByTestId("lab-status")).toHaveAttribute("data-status", "running");
  // Busy, not disabled: the focus stays on it, and pressing it again starts nothing.
  await expect(run).toBeFocused();
  await expect(run).toHaveAttribute("aria-disabled", "true");
  await page.keyboard.press("Enter");
  await expect(page.getByTestId("lab-error")).toHaveCount(0);
  await page.keyboard.press("Tab");
  await expect(stop).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(page.getByTestId("lab-status")).toHaveAttribute("data-status", "stopped", { timeout: 30_000 });
  await expect(stop).toHaveCount(0);
  await expect(run).toBeFocused();
  await expect(run).toHaveAttribute("aria-disabled", "false");
});

test("a run whose page goes offline says the connection is lost and the run goes on, a Stop unanswered says so, and what did not run says so", async ({
  signUp,
  env,
}) => {
  // A run, a Stop that waits 10 s for a connection, then a reconnection and a Stop that is answered.
  test.slow();
  const presenter = await signUp("lab_offline");
  const page = await presenter.context.newPage();
  // Offline is the browser's network emulation (the page hears "offline"), and reconnections are refused here too:
  // a socket to localhost may otherwise get through the emulation.
  let online = true;
  await page.routeWebSocket(/\/socket\.io\//, async (ws) => {
    if (online) ws.connectToServer();
    else await ws.close();
  });
  await page.goto(`${env.serverA}/lab`);
  const status = page.getByTestId("lab-status");
  const offline = page.getByTestId("lab-offline");
  // Long enough to be stopped: every step of every operation waits 5 ms.
  await page.getByTestId("lab-operations").fill("1000000");
  await page.getByTestId("lab-stepDelayMs").fill("5");
  await page.getByTestId("lab-stepDelayRate").fill("1");
  await page.getByTestId("lab-run").click();
  await expect(status).toHaveAttribute("data-status", "running");
  await expect(offline).toHaveCount(0);
  // Lua runs last: not yet, while naive runs.
  const luaBadges = page.getByTestId("lab-badge-row").and(page.locator('[data-strategy="lua"]')).locator("td");
  await expect(luaBadges.first()).toHaveAttribute("aria-label", "not run yet");

  online = false;
  await presenter.context.setOffline(true);
  await expect(offline).toHaveText("Connection lost — reconnecting… (the run goes on on the server)");
  await page.getByTestId("lab-stop").click();
  // The Stop cannot reach the server: once it gives up waiting for the connection, the page says so.
  await expect(page.getByTestId("lab-error")).toHaveText(
    "No answer from the server to Stop; the run may still be going.",
    { timeout: 30_000 },
  );
  // In the run bar, on screen over the charts that Run scrolled to.
  await expect.poll(() => uncovered(page.getByTestId("lab-error"))).toBe(true);
  await expect(status).toHaveAttribute("data-status", "running");

  // Back online: the run was still going; Stop now reaches it.
  online = true;
  await presenter.context.setOffline(false);
  await expect(offline).toHaveCount(0, { timeout: 30_000 });
  await expect(status).toHaveText("running");
  // A Stop sent while the connection settles can lose its answer: the page then says so, and Stop is pressed again.
  const stopped = page.locator('[data-testid=lab-status][data-status="stopped"]');
  for (let tries = 0; tries < 3 && !(await stopped.isVisible()); tries++) {
    await page.getByTestId("lab-stop").click();
    await expect(stopped.or(page.getByTestId("lab-error")).first()).toBeVisible({ timeout: 30_000 });
  }
  await expect(stopped).toBeVisible();
  await expect(page.getByTestId("lab-error")).toHaveCount(0);
  // Stopped before it came to Lua: Lua did not run, and its live badges say so.
  await expect(luaBadges).toHaveCount(3);
  for (const cell of await luaBadges.all()) await expect(cell).toHaveAttribute("aria-label", "did not run");
});
