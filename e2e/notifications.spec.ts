import type { BrowserContext } from "@playwright/test";
import { expect, test } from "./fixtures.ts";
import { expectMuted, expectUnread, hide, openConversation, openRowMenu, sendMessage } from "./support/tally-page.ts";

interface NotificationEvent {
  event: "show" | "close";
  title: string;
  body: string;
  tag: string;
}

/**
 * Grants notifications to the context's pages on `origins` and records every notification they show or close,
 * whichever tab does it (the pages' own Notification, wrapped so that each call is reported to the test).
 */
async function recordNotifications(context: BrowserContext, origins: string[]): Promise<NotificationEvent[]> {
  const events: NotificationEvent[] = [];
  for (const origin of origins) await context.grantPermissions(["notifications"], { origin });
  await context.exposeBinding("tallyNotificationEvent", (_source, e: NotificationEvent) => void events.push(e));
  await context.addInitScript(() => {
    const Real = window.Notification;
    type Report = (e: { event: string; title: string; body: string; tag: string }) => void;
    const report = (e: Parameters<Report>[0]) =>
      (window as unknown as { tallyNotificationEvent?: Report }).tallyNotificationEvent?.(e);
    class Recorded extends Real {
      static override get permission() {
        return Real.permission;
      }
      static override requestPermission() {
        return Real.requestPermission();
      }
      constructor(title: string, options: NotificationOptions = {}) {
        super(title, options);
        const seen = { title, body: options.body ?? "", tag: options.tag ?? "" };
        report({ event: "show", ...seen });
        this.close = () => {
          report({ event: "close", ...seen });
          Real.prototype.close.call(this);
        };
      }
    }
    Object.defineProperty(window, "Notification", { configurable: true, writable: true, value: Recorded });
  });
  return events;
}

const shown = (events: NotificationEvent[]) => events.filter((e) => e.event === "show").map((e) => e.tag);
const closed = (events: NotificationEvent[]) => events.filter((e) => e.event === "close").map((e) => e.tag);

test("two hidden tabs of one user show one notification per message, none while a tab is looked at, and read in another tab closes them", async ({
  alice,
  bob,
  env,
}) => {
  const events = await recordNotifications(alice.context, [env.serverA]);
  const conversation = await bob.createConversation([alice.name]);
  const tag = (seq: number) => `tally:${conversation.id}:${seq}`;
  const [first, second] = [
    await alice.openTab(env.serverA, { window: "hidden" }),
    await alice.openTab(env.serverA, { window: "hidden" }),
  ];
  const bobPage = await bob.openTab(env.serverB, { open: conversation.id });

  await sendMessage(bobPage, "first");
  await sendMessage(bobPage, "second, a little longer");
  // Both tabs counted both messages, so both have heard of them: whatever they were going to show, they showed.
  await expectUnread(first, conversation.id, 2);
  await expectUnread(second, conversation.id, 2);
  expect(shown(events)).toEqual([tag(1), tag(2)]);
  expect(events.filter((e) => e.event === "show").map((e) => [e.title, e.body])).toEqual([
    [bob.name, "first"],
    [bob.name, "second, a little longer"],
  ]);
  expect(closed(events)).toEqual([]);

  // Someone is looking at a third tab: it shows the message itself, so nothing pops up.
  const looking = await alice.openTab(env.serverA, { window: "looking" });
  await sendMessage(bobPage, "third");
  for (const page of [first, second, looking]) await expectUnread(page, conversation.id, 3);
  expect(shown(events)).toEqual([tag(1), tag(2)]);

  // Reading the conversation in the looking tab closes the notifications the hidden tab showed.
  await openConversation(looking, conversation.id);
  await expectUnread(first, conversation.id, 0);
  await expect.poll(() => closed(events).sort()).toEqual([tag(1), tag(2)]);

  // The recorder itself: a notification made in a page is seen.
  await first.evaluate(() => new Notification("control", { tag: "control" }).close());
  await expect.poll(() => shown(events)).toEqual([tag(1), tag(2), "control"]);
});

test("a muted group notifies only of a message that mentions the user", async ({ alice, bob, carol, env }) => {
  const events = await recordNotifications(alice.context, [env.serverA]);
  const group = await bob.createConversation([alice.name, carol.name], "Noisy");
  const tab = await alice.openTab(env.serverA, { window: "looking" });
  const menu = await openRowMenu(tab, group.id);
  await menu.getByTestId("row-mute").click();
  await expectMuted(tab, group.id, true);
  await hide(tab);

  const bobPage = await bob.openTab(env.serverB, { open: group.id });
  await sendMessage(bobPage, "lunch?");
  await expectUnread(tab, group.id, 1, 0);
  await sendMessage(bobPage, `@${alice.name} are you in?`);
  await expectUnread(tab, group.id, 2, 1);
  await sendMessage(bobPage, "@all last call");
  await expectUnread(tab, group.id, 3, 2);
  expect(events.filter((e) => e.event === "show").map((e) => [e.tag, e.body])).toEqual([
    [`tally:${group.id}:2`, `${bob.name}: @${alice.name} are you in?`],
    [`tally:${group.id}:3`, `${bob.name}: @all last call`],
  ]);
});

test("the header's switch says whether Tally notifies, turns it off and on again, and is kept", async ({
  alice,
  bob,
  env,
}) => {
  const events = await recordNotifications(alice.context, [env.serverA]);
  const conversation = await bob.createConversation([alice.name]);
  const tag = (seq: number) => `tally:${conversation.id}:${seq}`;
  const page = await alice.openTab(env.serverA, { window: "looking" });
  const toggle = page.getByTestId("notifications-toggle");
  // What is on screen: the text holds a phone's shorter word too, hidden here.
  await expect(toggle).toHaveText("Notifications: on", { useInnerText: true });
  await expect(toggle).toHaveAttribute("aria-checked", "true");
  await expect(page.getByTestId("enable-notifications")).toHaveCount(0);

  await toggle.click();
  await expect(toggle).toHaveText("Notifications: off", { useInnerText: true });
  await expect(toggle).toHaveAttribute("aria-checked", "false");
  await page.reload();
  await expect(toggle).toHaveText("Notifications: off", { useInnerText: true });
  await hide(page);
  const bobPage = await bob.openTab(env.serverB, { open: conversation.id });
  await sendMessage(bobPage, "while off");
  // The tab counted it, so it has heard of it: whatever it was going to show, it showed.
  await expectUnread(page, conversation.id, 1);
  expect(shown(events)).toEqual([]);

  // The positive control: on again, the next message notifies.
  await toggle.click();
  await expect(toggle).toHaveText("Notifications: on", { useInnerText: true });
  await sendMessage(bobPage, "on again");
  await expectUnread(page, conversation.id, 2);
  await expect.poll(() => shown(events)).toEqual([tag(2)]);
});
