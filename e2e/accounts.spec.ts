import type { Page } from "@playwright/test";
import { E2E_PASSWORD, expect, test, uniqueName, type TestUser } from "./fixtures.ts";
import {
  appShell,
  conversationItem,
  expectTotalUnread,
  lookAt,
  sendMessage,
  contrastRatio,
} from "./support/tally-page.ts";

/**
 * Waits until every tab's socket is connected: a new conversation reaches a tab only through it. A tab whose
 * session ends before its socket connects is refused at the handshake, and the server cannot tell it why.
 */
async function socketsConnected(user: TestUser, partner: TestUser, tabs: Page[]): Promise<void> {
  const { id } = await user.createConversation([partner.name]);
  for (const tab of tabs) await expect(conversationItem(tab, id)).toBeVisible();
}

test("sign up, sign out and sign in again from the form; a wrong password and a taken name are refused", async ({
  newContext,
  env,
}) => {
  const page = await (await newContext()).newPage();
  await page.goto(env.serverA);
  // The primary button reads at WCAG AA (4.5:1) in both modes (dark mode's accent under white was 3.6:1).
  for (const colorScheme of ["dark", "light"] as const) {
    await page.emulateMedia({ colorScheme });
    expect(await contrastRatio(page.getByTestId("login-submit")), colorScheme).toBeGreaterThanOrEqual(4.5);
  }
  const name = uniqueName("erin");
  await page.getByTestId("login-mode-sign-up").click();
  await page.getByTestId("login-name").fill(name);
  await page.getByTestId("login-password").fill("erin's own password");
  await page.getByTestId("login-submit").click();
  await expect(page.getByTestId("current-user")).toHaveText(name);

  await page.getByTestId("sign-out").click();
  await expect(page.getByTestId("login-name")).toBeVisible();
  expect((await page.request.get(`${env.serverA}/api/session`)).status()).toBe(401);

  await page.getByTestId("login-name").fill(name.toUpperCase());
  await page.getByTestId("login-password").fill("not erin's password");
  await page.getByTestId("login-submit").click();
  await expect(page.getByTestId("login-error")).toHaveText("Wrong name or password.");
  // Either may be wrong, so both fields are marked and say why.
  const fields = [page.getByTestId("login-name"), page.getByTestId("login-password")];
  for (const field of fields) {
    await expect(field).toHaveAttribute("aria-invalid", "true");
    await expect(field).toHaveAccessibleDescription("Wrong name or password.");
  }

  await page.getByTestId("login-mode-sign-up").click();
  await page.getByTestId("login-password").fill("another password");
  await page.getByTestId("login-submit").click();
  await expect(page.getByTestId("login-error")).toContainText("taken");
  // The name is taken, the password is fine: only the name is marked.
  await expect(fields[0]!).toHaveAttribute("aria-invalid", "true");
  await expect(fields[0]!).toHaveAccessibleDescription(/taken/);
  await expect(fields[1]!).not.toHaveAttribute("aria-invalid");
  await expect(fields[1]!).toHaveAccessibleDescription("At least 8 characters.");

  await page.getByTestId("login-mode-sign-in").click();
  await page.getByTestId("login-name").fill(name);
  await page.getByTestId("login-password").fill("erin's own password");
  await page.getByTestId("login-submit").click();
  await expect(page.getByTestId("current-user")).toHaveText(name);
});

test("signing out in one tab ends that session in its other tabs on both instances; another session stays", async ({
  signUp,
  signIn,
  env,
}) => {
  const fay = await signUp("fay");
  const tabA = await fay.openTab(env.serverA);
  const tabB = await fay.openTab(env.serverB);
  // The same person on another device: a session of its own.
  const device = await signIn(fay);
  const otherDevice = await device.openTab(env.serverB);
  await socketsConnected(fay, await signUp("fay_friend"), [tabA, tabB, otherDevice]);

  await tabA.getByTestId("sign-out").click();
  await expect(tabA.getByTestId("login-name")).toBeVisible();
  // No reload: the server told the tab's socket why and dropped it, the tab found its session gone, and says so.
  await expect(tabB.getByTestId("login-name")).toBeVisible();
  await expect(tabB.getByTestId("session-ended")).toHaveText("You signed out in another tab.");
  await expect(tabA.getByTestId("session-ended")).toHaveCount(0);
  await expect(appShell(otherDevice)).toBeVisible();
  expect((await device.context.request.get(`${env.serverA}/api/session`)).status()).toBe(200);

  // Signing out everywhere from the other device ends that one too (without a reason: it signed itself out).
  await otherDevice.getByTestId("sign-out-everywhere").click();
  await expect(otherDevice.getByTestId("login-name")).toBeVisible();
  await expect(otherDevice.getByTestId("session-ended")).toHaveCount(0);
  expect((await device.context.request.get(`${env.serverB}/api/session`)).status()).toBe(401);
});

test("on a phone, Sign out everywhere is behind More, and the other devices' sign-in forms say why they are there", async ({
  signUp,
  signIn,
  env,
}) => {
  const gus = await signUp("gus");
  const laptop = await gus.openTab(env.serverA);
  // A second tab of the laptop's browser (its session), on the other instance.
  const laptopTab = await gus.openTab(env.serverB);
  const phone = await (await signIn(gus)).openTab(env.serverB);
  await socketsConnected(gus, await signUp("gus_friend"), [laptop, laptopTab, phone]);
  await phone.setViewportSize({ width: 375, height: 740 });
  const everywhere = phone.getByTestId("sign-out-everywhere");
  await expect(everywhere).toBeHidden();
  await phone.getByTestId("account-more").click();
  await expect(everywhere).toBeVisible();
  const box = (await everywhere.boundingBox())!;
  expect(box.x).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width).toBeLessThanOrEqual(375);
  // Escape closes it; More opens it again.
  await phone.keyboard.press("Escape");
  await expect(everywhere).toBeHidden();
  await phone.getByTestId("account-more").click();
  await everywhere.click();

  await expect(phone.getByTestId("login-name")).toBeVisible();
  await expect(phone.getByTestId("session-ended")).toHaveCount(0);
  for (const tab of [laptop, laptopTab]) {
    await expect(tab.getByTestId("login-name")).toBeVisible();
    await expect(tab.getByTestId("session-ended")).toHaveText("You signed out everywhere from another device or tab.");
  }
  // Signed in again, the reason has done its work.
  await laptop.getByTestId("login-name").fill(gus.name);
  await laptop.getByTestId("login-password").fill(E2E_PASSWORD);
  await laptop.getByTestId("login-submit").click();
  await expect(laptop.getByTestId("current-user")).toHaveText(gus.name);
  await laptop.getByTestId("sign-out").click();
  await expect(laptop.getByTestId("login-name")).toBeVisible();
  await expect(laptop.getByTestId("session-ended")).toHaveCount(0);
});

test("the demo accounts are shown with their password and sign in with it", async ({ startServer, newContext }) => {
  const server = await startServer("demo", { SEED_DEMO: "1" });
  const page = await (await newContext()).newPage();
  await page.goto(server.url);
  const demo = page.getByTestId("demo-accounts");
  await expect(demo).toContainText("not for real use");
  const password = (await page.getByTestId("demo-password").textContent()) ?? "";
  expect(password.length).toBeGreaterThanOrEqual(8);

  await page.getByTestId("demo-account-bob").click();
  await expect(page.getByTestId("login-name")).toHaveValue("bob");
  await expect(page.getByTestId("login-password")).toHaveValue(password);
  await page.getByTestId("login-submit").click();
  await expect(page.getByTestId("current-user")).toHaveText("bob");
  await expect(appShell(page)).toBeVisible();
});

test("the pages run under the strict Content-Security-Policy without a single violation", async ({
  newContext,
  env,
}) => {
  const context = await newContext();
  await context.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { __cspViolations: string[] }).__cspViolations = seen;
    document.addEventListener("securitypolicyviolation", (e) => seen.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const page = await context.newPage();
  const violations = () => page.evaluate(() => (window as unknown as { __cspViolations: string[] }).__cspViolations);

  const response = await page.goto(env.serverA);
  const policy = (await response?.headerValue("content-security-policy")) ?? "";
  expect(policy).toMatch(/script-src 'nonce-[^']+' 'strict-dynamic'/);
  expect(policy).toContain("frame-ancestors 'none'");
  // Every script Next.js rendered carries this response's nonce.
  const nonce = /'nonce-([^']+)'/.exec(policy)![1];
  const scripts = await page.evaluate(() => Array.from(document.scripts, (s) => s.nonce));
  expect(scripts.length).toBeGreaterThan(0);
  expect(new Set(scripts)).toEqual(new Set([nonce]));

  await page.getByTestId("login-mode-sign-up").click();
  await page.getByTestId("login-name").fill(uniqueName("csp"));
  await page.getByTestId("login-password").fill(E2E_PASSWORD);
  await page.getByTestId("login-submit").click();
  await expect(appShell(page)).toBeVisible();
  await page.goto(`${env.serverA}/lab`);
  await expect(page.getByTestId("lab-run")).toBeVisible();
  expect(await violations()).toEqual([]);

  // Positive control: the recorder does see a violation when there is one.
  await page.evaluate(() => {
    const img = document.createElement("img");
    img.src = "http://127.0.0.2:9/blocked.png";
    document.body.append(img);
  });
  await expect.poll(violations).toEqual([expect.stringMatching(/^img-src http:\/\/127\.0\.0\.2:9/)]);
});

test("a tab offline while another tab of its browser signs someone else in neither sends, reads nor counts for them", async ({
  alice,
  bob,
  carol,
  env,
}) => {
  // Socket.IO waits up to its maximum reconnection delay before trying again.
  test.setTimeout(90_000);
  const group = await carol.createConversation([alice.name, bob.name], "trio");
  const carolTab = await carol.openTab(env.serverA, { open: group.id });
  for (const text of ["one", "two", "three"]) await sendMessage(carolTab, text);

  // Two tabs of Alice's browser; the second looks at the group (so reads what it shows) and loses its network alone.
  const signInTab = await alice.openTab(env.serverA, { window: "hidden" });
  const staleTab = await alice.openTab(env.serverA, { window: "looking", open: group.id });
  await expectTotalUnread(staleTab, 0);
  const network = await alice.context.newCDPSession(staleTab);
  const offline = (yes: boolean) =>
    network.send("Network.emulateNetworkConditions", {
      offline: yes,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
  await network.send("Network.enable");
  await offline(true);
  await expect(staleTab.getByTestId("connection-banner")).toHaveAttribute("data-state", "offline");
  await staleTab.getByTestId("message-input").fill("alice wrote this offline");
  await staleTab.getByTestId("message-input").press("Enter");
  await expect(staleTab.getByTestId("message-pending")).toHaveCount(1);

  // Meanwhile the other tab signs Alice out (the offline tab cannot hear it) and Bob in: the cookie is now his.
  await lookAt(signInTab);
  await signInTab.getByTestId("sign-out").click();
  await signInTab.getByTestId("login-name").fill(bob.name);
  await signInTab.getByTestId("login-password").fill(E2E_PASSWORD);
  await signInTab.getByTestId("login-submit").click();
  await expect(signInTab.getByTestId("current-user")).toHaveText(bob.name);
  await expectTotalUnread(signInTab, 3);

  // Back online, looking at the group: the tab still shows Alice, so it must not reconnect as Bob.
  await lookAt(staleTab);
  await offline(false);
  await expect(staleTab.getByTestId("login-name")).toBeVisible({ timeout: 30_000 });
  await expect(staleTab.getByTestId("current-user")).toHaveCount(0);

  // Bob's counts are untouched (nothing read as him), and Alice's queued message did not go out under his name.
  const snapshot = await bob.snapshot();
  expect(snapshot.totalUnread).toBe(3);
  await expectTotalUnread(signInTab, 3);
  const history = await carol.context.request.get(`${env.serverA}/api/conversations/${group.id}/messages`, {
    headers: { authorization: `Bearer ${carol.token}` },
  });
  const { messages } = (await history.json()) as { messages: { content: string }[] };
  expect(messages.map((m) => m.content)).toEqual(["one", "two", "three"]);
});
