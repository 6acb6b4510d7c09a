import { expect, test } from "./fixtures.ts";

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
  /** Wholly inside the window, and what a click at its middle reaches (nothing drawn over it). */
  async function expectOnScreen(button: typeof run) {
    await expect(button).toBeInViewport({ ratio: 1 });
    expect(
      await button.evaluate((el) => {
        const r = el.getBoundingClientRect();
        return el.contains(document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2));
      }),
    ).toBe(true);
  }

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
