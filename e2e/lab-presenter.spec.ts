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
