import { expect, test } from "./fixtures.ts";

test("the lab runs a small comparison of the four strategies, charts it and replays a story", async ({
  signUp,
  env,
}) => {
  const presenter = await signUp("lab");
  const page = await presenter.context.newPage();
  await page.goto(`${env.serverA}/lab`);

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
  // The step-failure fault makes the naive strategy drift; Lua never does.
  await expect(rows.and(page.locator('[data-strategy="naive"]'))).not.toHaveAttribute("data-drift", "0");
  await expect(rows.and(page.locator('[data-strategy="lua"]'))).toHaveAttribute("data-drift", "0");

  for (const chart of ["lab-chart-throughput", "lab-chart-drift"]) {
    await expect(page.getByTestId(chart)).toBeVisible();
    // One drawn line per strategy.
    await expect(page.getByTestId(chart).locator("path.recharts-line-curve")).toHaveCount(4);
  }

  await page.getByTestId("lab-story-race").click();
  const columns = page.getByTestId("lab-story-column");
  await expect(columns).toHaveCount(4, { timeout: 30_000 });
  await page.getByRole("button", { name: "To the end" }).click();
  const naive = columns.and(page.locator('[data-strategy="naive"]'));
  await expect(naive.getByTestId("lab-story-badge")).toHaveText("1");
  await expect(naive.getByTestId("lab-story-list")).toHaveText("0");
  await expect(columns.and(page.locator('[data-strategy="lua"]')).getByTestId("lab-story-verdict")).toContainText(
    "badge = list = truth",
  );
});

test("the lab asks anonymous visitors to sign in", async ({ newContext, env }) => {
  const context = await newContext();
  const page = await context.newPage();
  await page.goto(`${env.serverA}/lab`);
  await expect(page.getByTestId("lab-signed-out")).toBeVisible();
});
