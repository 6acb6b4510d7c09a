import path from "node:path";
import { INSTANCE_COOKIE, startBalancer } from "../server/embedded/haproxy.ts";
import { freePort } from "../server/embedded/ports.ts";
import { expect, test } from "./fixtures.ts";
import { expectUnread, openConversation, sendMessage } from "./support/tally-page.ts";

test("two tabs of one user, on two instances behind HAProxy, agree on every badge while one instance is killed and its tab reconnects through the balancer", async ({
  alice,
  bob,
  env,
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
    const pinned = async () =>
      (await alice.context.cookies(balancer.url)).find((c) => c.name === INSTANCE_COOKIE)?.value;

    // The balancer pins a browser with a cookie; the second tab gets the other instance once that cookie is gone
    // (a tab opened after it expired, or on another device, would too).
    const front = await alice.openTab(balancer.url, { window: "looking" });
    const frontInstance = await pinned();
    expect(frontInstance).toMatch(/^i[01]$/);
    await alice.context.clearCookies({ name: INSTANCE_COOKIE });
    const behind = await alice.openTab(balancer.url, { window: "hidden" });
    const behindInstance = await pinned();
    expect([frontInstance, behindInstance].sort()).toEqual(["i0", "i1"]);

    const bobPage = await bob.openTab(env.serverA, { open: conversation.id });
    await sendMessage(bobPage, "one");
    await sendMessage(bobPage, "two");
    for (const page of [front, behind]) await expectUnread(page, conversation.id, 2);

    // The hidden tab's instance dies without a word; its tab reconnects through the balancer to the other one.
    await instances[Number(behindInstance!.slice(1))]!.kill();
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
