import path from "node:path";
import { INSTANCE_COOKIE, startBalancer } from "../server/embedded/haproxy.ts";
import { freePort } from "../server/embedded/ports.ts";
import { expect, test, type TestUser } from "./fixtures.ts";
import { expectUnread, openConversation, sendMessage } from "./support/tally-page.ts";

test("two tabs of one user, on two devices and two instances behind HAProxy, agree on every badge while one instance is killed and its tab reconnects through the balancer", async ({
  alice,
  bob,
  env,
  signIn,
  startServer,
}, testInfo) => {
  test.setTimeout(180_000);
  const instances = [await startServer("lb-0"), await startServer("lb-1")];
  const balancer = await startBalancer({
    port: await freePort(),
    instances: instances.map((i, n) => ({ name: `i${n}`, port: i.port })),
    dir: path.join(env.tmpDir, `haproxy-${testInfo.testId}`),
  });
  try {
    const conversation = await bob.createConversation([alice.name]);
    const pinned = async (user: TestUser) =>
      (await user.context.cookies(balancer.url)).find((c) => c.name === INSTANCE_COOKIE)?.value;

    // The balancer pins each browser to an instance with a cookie. Alice's second device is pinned to the other
    // instance here, as round robin would pin a new browser: left to round robin, which instance it gets depends on
    // how many cookieless requests reached the balancer before, and the test would be about timing.
    const front = await alice.openTab(balancer.url, { window: "looking" });
    const frontInstance = await pinned(alice);
    expect(frontInstance).toMatch(/^i[01]$/);
    const behindInstance = frontInstance === "i0" ? "i1" : "i0";
    const device = await signIn(alice);
    await device.context.addCookies([{ name: INSTANCE_COOKIE, value: behindInstance, url: balancer.url }]);
    const behind = await device.openTab(balancer.url, { window: "hidden" });
    // HAProxy re-pins a browser whose instance it cannot use, so the cookie still naming it says the tab is there.
    expect(await pinned(device)).toBe(behindInstance);
    expect(await pinned(alice)).toBe(frontInstance);

    const bobPage = await bob.openTab(env.serverA, { open: conversation.id });
    await sendMessage(bobPage, "one");
    await sendMessage(bobPage, "two");
    for (const page of [front, behind]) await expectUnread(page, conversation.id, 2);

    // The hidden tab's instance dies without a word; its tab reconnects through the balancer to the other one.
    await instances[Number(behindInstance.slice(1))]!.kill();
    await expect(behind.getByTestId("connection-banner")).toBeVisible();
    await sendMessage(bobPage, "three, while one instance is down");
    await expect(behind.getByTestId("connection-banner")).toHaveCount(0, { timeout: 30_000 });
    for (const page of [front, behind]) await expectUnread(page, conversation.id, 3);

    // A read in the front tab reaches the tab that moved instances.
    await openConversation(front, conversation.id);
    for (const page of [front, behind]) await expectUnread(page, conversation.id, 0);
    expect((await alice.snapshot(env.serverB)).totalUnread).toBe(0);
  } finally {
    await balancer.stop();
  }
});
