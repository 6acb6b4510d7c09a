import { randomUUID } from "node:crypto";
import type { Page } from "@playwright/test";
import { io, type Socket } from "socket.io-client";
import type { ClientToServerEvents, ServerToClientEvents } from "../server/contracts/index.ts";
import { expect, test, type TestUser } from "./fixtures.ts";
import {
  appBadge,
  badgeSums,
  conversationItem,
  expectMessageSeqs,
  expectUnread,
  hide,
  lookAt,
  messages,
  openConversation,
  watchBadgeSums,
} from "./support/tally-page.ts";

type ApiSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

/** A socket of `user` on `server`, as the page opens it but authenticated by token: the fast path for setup. */
async function connect(user: TestUser, server: string): Promise<ApiSocket> {
  const socket: ApiSocket = io(server, {
    auth: { token: user.token },
    extraHeaders: { origin: new URL(server).origin },
    transports: ["websocket"],
    forceNew: true,
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("connect_error", reject);
  });
  return socket;
}

/**
 * Sends `count` messages in order, numbered after `prefix`, or after lines of `prefix` in turn; a send refused by the
 * rate limit (60 per 3 s) is tried again.
 */
async function sendMany(
  socket: ApiSocket,
  conversationId: number,
  count: number,
  prefix: string | readonly string[],
): Promise<void> {
  for (let i = 1; i <= count; i++) {
    const content = typeof prefix === "string" ? `${prefix} ${i}` : `${prefix[(i - 1) % prefix.length]} (${i})`;
    const input = { conversationId, clientMsgId: randomUUID(), content };
    for (;;) {
      const res = await socket.timeout(10_000).emitWithAck("message:send", input);
      if (res.ok) break;
      if (res.error.code !== "rate_limited") throw new Error(`send refused: ${res.error.message}`);
      // The limit's window frees up within 3 s; the same clientMsgId makes the retry safe.
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

async function markRead(user: TestUser, server: string, conversationId: number, seq: number): Promise<void> {
  const socket = await connect(user, server);
  try {
    const res = await socket.timeout(10_000).emitWithAck("conversation:read", { conversationId, seq });
    expect(res.ok).toBe(true);
  } finally {
    socket.disconnect();
  }
}

/** A conversation bob starts with alice: five messages she has read, then `count` she has not (sendMany's `prefix`). */
async function readThenUnread(
  alice: TestUser,
  bob: TestUser,
  env: { serverA: string; serverB: string },
  count: number,
  prefix: string | readonly string[],
) {
  const conversation = await bob.createConversation([alice.name]);
  const bobSocket = await connect(bob, env.serverB);
  try {
    await sendMany(bobSocket, conversation.id, 5, "read before");
    await markRead(alice, env.serverA, conversation.id, 5);
    await sendMany(bobSocket, conversation.id, count, prefix);
  } finally {
    bobSocket.disconnect();
  }
  return conversation;
}

const count = async (page: Page): Promise<number> => Number(await appBadge(page).getAttribute("data-count"));
const rowCount = async (page: Page, id: number): Promise<number> =>
  Number(await conversationItem(page, id).getAttribute("data-unread"));

/** Scrolls the message list by `by` pixels (or to its bottom) and says how far from the bottom it then is. */
function scrollList(page: Page, by: number | "bottom" | "top"): Promise<number> {
  return page.getByTestId("message-list").evaluate((el, step) => {
    if (step === "bottom") el.scrollTop = el.scrollHeight;
    else if (step === "top") el.scrollTop = 0;
    else el.scrollTop += step;
    return el.scrollHeight - el.scrollTop - el.clientHeight;
  }, by);
}

/** The app badge equalled the sum of the rows after every DOM update, and never went up after `from`. */
async function expectSumsCountingDown(page: Page, from: number): Promise<void> {
  const sums = await badgeSums(page);
  expect(
    sums.filter((s) => s.app !== s.rows),
    "app badge ≠ sum of the rows",
  ).toEqual([]);
  const values = sums.map((s) => s.app);
  const start = values.indexOf(from);
  expect(start, `the badge showed ${from}: ${values.join(", ")}`).toBeGreaterThanOrEqual(0);
  const after = values.slice(start);
  expect(after, "the badge only counts down").toEqual([...after].sort((a, b) => b - a));
}

test("120 unread open at the first of them, and count down only as they scroll into view, the same in both tabs and on the server", async ({
  alice,
  bob,
  env,
}) => {
  test.setTimeout(180_000);
  const conversation = await readThenUnread(alice, bob, env, 120, "unread");
  const serverCount = async () => (await alice.snapshot(env.serverB)).totalUnread;
  expect(await serverCount()).toBe(120);

  // Alice: the conversation open in a hidden tab on B, and a tab on A she looks at.
  const behind = await alice.openTab(env.serverB, { window: "hidden", open: conversation.id });
  const front = await alice.openTab(env.serverA, { window: "looking" });
  await watchBadgeSums(front);
  await watchBadgeSums(behind);
  await expect(appBadge(front)).toHaveAttribute("data-count", "120");
  await openConversation(front, conversation.id);

  // It opens on the first unread message, below the divider, with every page down to it loaded.
  const divider = front.getByTestId("unread-divider");
  await expect(divider).toBeInViewport();
  await expect(divider).toHaveText("New messages");
  await expect(front.locator("[data-testid=unread-divider] + [data-testid=message]")).toHaveAttribute("data-seq", "6");
  await expect(messages(front).first()).toHaveAttribute("data-seq", "1");
  await expect(messages(front).last()).toHaveAttribute("data-seq", "125");
  await expect(messages(front).filter({ hasText: /^unread 120$/ })).not.toBeInViewport();

  // What the first screen shows is read, the rest is not; both tabs, their titles and the server agree.
  const agreed = async (): Promise<number | null> => {
    const [a, aRow, b, s, aTitle, bTitle] = await Promise.all([
      count(front),
      rowCount(front, conversation.id),
      count(behind),
      serverCount(),
      front.title(),
      behind.title(),
    ]);
    const title = a > 0 ? `(${a}) Tally` : "Tally";
    return a === aRow && a === b && a === s && aTitle === title && bTitle === title ? a : null;
  };
  let previous = 120;
  await expect.poll(async () => ((await agreed()) ?? 120) < previous).toBe(true);
  previous = (await agreed()) ?? previous;
  expect(previous).toBeGreaterThan(0);

  // Scrolling down a screen at a time: the count drops at each step, and reaches 0 only at the bottom.
  const steps: number[] = [previous];
  const height = await front.getByTestId("message-list").evaluate((el) => el.clientHeight);
  for (;;) {
    const left = await scrollList(front, Math.round(height * 0.8));
    const before = previous;
    await expect
      .poll(async () => {
        const now = await agreed();
        return now !== null && now < before;
      })
      .toBe(true);
    previous = (await agreed()) ?? previous;
    steps.push(previous);
    if (left <= 2) break;
    expect(previous, `still ${left}px above the bottom`).toBeGreaterThan(0);
  }
  expect(previous).toBe(0);
  expect(steps.length).toBeGreaterThan(3);
  await expect.poll(serverCount).toBe(0);
  expect((await alice.snapshot()).conversations.find((c) => c.id === conversation.id)?.lastReadSeq).toBe(125);

  // The divider stays where reading started while the conversation is open.
  await expect(front.locator("[data-testid=unread-divider] + [data-testid=message]")).toHaveAttribute("data-seq", "6");
  await expectSumsCountingDown(front, 120);
  await expectSumsCountingDown(behind, 120);
});

test("scrolled up, new messages count and wait behind 'N new ↓'; a click shows and reads them", async ({
  alice,
  bob,
  env,
}) => {
  const conversation = await bob.createConversation([alice.name]);
  const bobSocket = await connect(bob, env.serverB);
  try {
    await sendMany(bobSocket, conversation.id, 40, "history");
    await markRead(alice, env.serverA, conversation.id, 40);

    const front = await alice.openTab(env.serverA, { window: "looking" });
    const behind = await alice.openTab(env.serverB, { window: "hidden" });
    await openConversation(front, conversation.id);
    await expectMessageSeqs(
      front,
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
    // Nothing unread at open: at the bottom, and no divider.
    await expect(front.getByTestId("unread-divider")).toHaveCount(0);
    await expect(front.getByTestId("jump-to-latest")).toHaveCount(0);
    await watchBadgeSums(front);
    await watchBadgeSums(behind);

    await scrollList(front, "top");
    const jump = front.getByTestId("jump-to-latest");
    await expect(jump).toBeVisible();
    for (const n of [1, 2, 3]) {
      await sendMany(bobSocket, conversation.id, 1, "while scrolled up");
      await expect(appBadge(front)).toHaveAttribute("data-count", String(n));
      await expect(appBadge(behind)).toHaveAttribute("data-count", String(n));
    }
    await expect(jump).toHaveText("3 new ↓");
    await expect.poll(async () => (await alice.snapshot()).totalUnread).toBe(3);
    await expect(messages(front).last()).toHaveAttribute("data-seq", "43");
    await expect(messages(front).last()).not.toBeInViewport();

    await jump.click();
    await expect(messages(front).last()).toBeInViewport();
    await expect(jump).toHaveCount(0);
    await expect(appBadge(front)).toHaveAttribute("data-count", "0");
    await expect(appBadge(behind)).toHaveAttribute("data-count", "0");
    await expect.poll(async () => (await alice.snapshot()).totalUnread).toBe(0);

    for (const page of [front, behind]) {
      const sums = await badgeSums(page);
      expect(sums.filter((s) => s.app !== s.rows)).toEqual([]);
      expect(sums.map((s) => s.app)).toEqual([0, 1, 2, 3, 0]);
    }

    // At the bottom, what arrives is read at once, as before, and the looking tab never shows it as unread.
    await sendMany(bobSocket, conversation.id, 1, "at the bottom");
    await expect(messages(front).last()).toHaveAttribute("data-seq", "44");
    await expect.poll(async () => (await alice.snapshot()).conversations[0]?.lastReadSeq).toBe(44);
    await expect(appBadge(behind)).toHaveAttribute("data-count", "0");
    expect((await badgeSums(front)).map((s) => s.app)).toEqual([0, 1, 2, 3, 0]);
    expect((await badgeSums(behind)).filter((s) => s.app !== s.rows)).toEqual([]);
  } finally {
    bobSocket.disconnect();
  }
});

test("opened again in the same tab, with its messages already loaded, 40 new count down as they scroll into view", async ({
  alice,
  bob,
  env,
}) => {
  test.setTimeout(120_000);
  const conversation = await readThenUnread(alice, bob, env, 0, "unused");
  const other = await bob.createConversation([alice.name], "elsewhere");
  const front = await alice.openTab(env.serverA, { window: "looking" });
  await watchBadgeSums(front);
  // Opened once, then left for another conversation: its messages stay loaded in the tab.
  await openConversation(front, conversation.id);
  await expect(messages(front).last()).toHaveAttribute("data-seq", "5");
  await openConversation(front, other.id);
  const bobSocket = await connect(bob, env.serverB);
  try {
    await sendMany(bobSocket, conversation.id, 40, "while away");
  } finally {
    bobSocket.disconnect();
  }
  await expect(appBadge(front)).toHaveAttribute("data-count", "40");

  // Opened again: on the divider, the first screen read, then each screen as it scrolls into view; not all at once
  // at the bottom (the messages were there before the list watched them).
  await openConversation(front, conversation.id);
  await expect(front.getByTestId("unread-divider")).toBeInViewport();
  const server = async () => (await alice.snapshot()).totalUnread;
  await expect.poll(() => count(front)).toBeLessThan(40);
  let previous = await count(front);
  expect(previous).toBeGreaterThan(0);
  const height = await front.getByTestId("message-list").evaluate((el) => el.clientHeight);
  let steps = 0;
  for (;;) {
    const left = await scrollList(front, Math.round(height * 0.8));
    const before = previous;
    await expect.poll(() => count(front)).toBeLessThan(before);
    previous = await count(front);
    steps++;
    if (left <= 2) break;
    expect(previous, `still ${left}px above the bottom`).toBeGreaterThan(0);
  }
  expect(previous).toBe(0);
  expect(steps).toBeGreaterThan(1);
  await expect.poll(server).toBe(0);
  await expectSumsCountingDown(front, 40);
});

test("a few unread open at the bottom, still below the divider, and are read at once", async ({ alice, bob, env }) => {
  const conversation = await bob.createConversation([alice.name]);
  const bobSocket = await connect(bob, env.serverB);
  try {
    await sendMany(bobSocket, conversation.id, 30, "history");
    await markRead(alice, env.serverA, conversation.id, 30);
    await sendMany(bobSocket, conversation.id, 3, "new");
  } finally {
    bobSocket.disconnect();
  }
  const front = await alice.openTab(env.serverA, { window: "looking" });
  const behind = await alice.openTab(env.serverB, { window: "hidden" });
  await watchBadgeSums(front);
  await watchBadgeSums(behind);
  await expect(appBadge(front)).toHaveAttribute("data-count", "3");
  await expect(front).toHaveTitle("(3) Tally");
  await openConversation(front, conversation.id);

  // Everything unread fits: the list opens at the bottom, with the divider above the first of the three.
  await expect(messages(front).last()).toHaveAttribute("data-seq", "33");
  await expect(messages(front).last()).toBeInViewport();
  const divider = front.getByTestId("unread-divider");
  await expect(divider).toBeInViewport();
  await expect(front.locator("[data-testid=unread-divider] + [data-testid=message]")).toHaveAttribute("data-seq", "31");
  await expect(front.getByTestId("jump-to-latest")).toHaveCount(0);
  for (const page of [front, behind]) {
    await expect(appBadge(page)).toHaveAttribute("data-count", "0");
    await expect(page).toHaveTitle("Tally");
  }
  await expect.poll(async () => (await alice.snapshot()).totalUnread).toBe(0);
  // The divider stays while the conversation is open, though nothing is unread any more.
  await expect(front.locator("[data-testid=unread-divider] + [data-testid=message]")).toHaveAttribute("data-seq", "31");
  await expectSumsCountingDown(front, 3);
  await expectSumsCountingDown(behind, 3);
});

test("a reply sent from the divider reads nothing it has not shown, and the cursor moves over it once the rest is read", async ({
  alice,
  bob,
  env,
}) => {
  test.setTimeout(120_000);
  const conversation = await readThenUnread(alice, bob, env, 60, [
    "Morning! Did you see the numbers from yesterday?",
    "The badge test passed on both instances",
    "I'll push the fix after lunch.",
    "Can you review the divider styling?",
    "Looks good to me, ship it.",
    "One more thing: the jump button should show the count.",
  ]);
  const serverCount = async () => (await alice.snapshot(env.serverB)).totalUnread;
  const front = await alice.openTab(env.serverA, { window: "looking" });
  await expect(appBadge(front)).toHaveAttribute("data-count", "60");
  await openConversation(front, conversation.id);
  const divider = front.getByTestId("unread-divider");
  await expect(divider).toBeInViewport();
  // The first screen is read; then the count holds (the rest is below the view).
  await expect
    .poll(async () => (await serverCount()) < 60 && (await serverCount()) === (await count(front)))
    .toBe(true);
  const left = await serverCount();
  expect(left).toBeGreaterThan(0);
  // The README's picture of the divider: TALLY_SCREENSHOTS=<dir> writes it.
  if (process.env.TALLY_SCREENSHOTS)
    await front.screenshot({ path: `${process.env.TALLY_SCREENSHOTS}/unread-divider.png` });

  // Alice replies from where she is: the list does not jump past what she has not seen, and nothing more is read.
  await front.getByTestId("message-input").fill("replying to the first ones");
  await front.getByTestId("send-button").click();
  await expect(front.locator('[data-testid=message][data-seq="66"]')).toHaveCount(1);
  await expect(divider).toBeInViewport();
  // The reply is out of sight below: a note beside "N new ↓" says it went.
  const note = front.getByTestId("reply-note");
  await expect(note).toHaveText("Reply sent, below the new messages");
  await expect(note).toBeVisible();
  await expect(front.getByTestId("jump-to-latest")).toBeVisible();
  expect(await serverCount()).toBe(left);
  await expect(appBadge(front)).toHaveAttribute("data-count", String(left));
  expect((await alice.snapshot()).conversations.find((c) => c.id === conversation.id)?.lastReadSeq).toBeLessThan(65);

  // Reading down to the last of bob's messages moves her cursor over her own reply too.
  for (let i = 0; i < 50 && (await scrollList(front, "bottom")) > 2; i++);
  await expect.poll(serverCount).toBe(0);
  // In sight now, the reply needs no note.
  await expect(note).toHaveText("");
  await expect(appBadge(front)).toHaveAttribute("data-count", "0");
  expect((await alice.snapshot()).conversations.find((c) => c.id === conversation.id)?.lastReadSeq).toBe(66);
});

test("a long draft grows the composer and a list at its bottom stays there, the newest message in view", async ({
  alice,
  bob,
  env,
}) => {
  // Alice's own messages: nothing unread, so the conversation opens at its bottom.
  const conversation = await bob.createConversation([alice.name]);
  const socket = await connect(alice, env.serverA);
  try {
    await sendMany(socket, conversation.id, 30, "a note of mine");
  } finally {
    socket.disconnect();
  }
  const page = await alice.openTab(env.serverA, { window: "looking", open: conversation.id });
  const input = page.getByTestId("message-input");
  const gap = () => scrollList(page, 0);
  const draft = Array.from({ length: 8 }, (_, i) => `line ${i + 1} of a long pasted draft`).join("\n");
  for (const size of [
    { width: 1280, height: 720 },
    { width: 375, height: 740 },
  ]) {
    await page.setViewportSize(size);
    await expect.poll(gap).toBeLessThanOrEqual(2);
    const oneLine = (await input.boundingBox())!.height;
    await input.fill(draft);
    await expect.poll(async () => (await input.boundingBox())!.height).toBeGreaterThan(oneLine + 40);
    await expect.poll(gap, `at ${size.width} px`).toBeLessThanOrEqual(2);
    await expect(page.getByTestId("jump-to-latest")).toHaveCount(0);
    await expect(page.locator('[data-testid=message][data-seq="30"]')).toBeInViewport({ ratio: 1 });
    await input.fill("");
    await expect.poll(gap).toBeLessThanOrEqual(2);
  }
});

/** Seven lines: twenty of them are several screens high. */
const TALL = ["a tall message", "", "second line", "third line", "fourth line", "fifth line", "the end"].join("\n");

test("a tab looked at again reads only the arrivals it shows; those that would have scrolled by wait below", async ({
  alice,
  bob,
  env,
}) => {
  const conversation = await bob.createConversation([alice.name]);
  const lastReadSeq = async () =>
    (await alice.snapshot()).conversations.find((c) => c.id === conversation.id)?.lastReadSeq ?? 0;
  const bobSocket = await connect(bob, env.serverB);
  try {
    await sendMany(bobSocket, conversation.id, 5, "before");
    const page = await alice.openTab(env.serverA, { window: "looking", open: conversation.id });
    await expect.poll(lastReadSeq).toBe(5);

    await hide(page);
    await sendMany(bobSocket, conversation.id, 20, [TALL]);
    await expectUnread(page, conversation.id, 20);
    await expectMessageSeqs(
      page,
      Array.from({ length: 25 }, (_, i) => i + 1),
    );

    // Back: the first arrival is at the top of the list, and only what the screen shows is read.
    await lookAt(page);
    await expect(page.locator('[data-testid="message"][data-seq="6"]')).toBeInViewport();
    // "New messages" says where they start.
    await expect(page.locator("[data-testid=unread-divider] + [data-testid=message]")).toHaveAttribute("data-seq", "6");
    await expect(page.getByTestId("unread-divider")).toBeInViewport();
    await expect.poll(lastReadSeq).toBeGreaterThanOrEqual(6);
    const read = await lastReadSeq();
    expect(read).toBeLessThan(25);
    await expectUnread(page, conversation.id, 25 - read);
    await expect(page.getByTestId("jump-to-latest")).toBeVisible();
    await expect(page.locator('[data-testid="message"][data-seq="25"]')).not.toBeInViewport();
  } finally {
    bobSocket.disconnect();
  }
});

test("a window too small to show a message reads nothing that arrives; grown again, it reads what it shows", async ({
  alice,
  bob,
  env,
}) => {
  const conversation = await bob.createConversation([alice.name]);
  const bobSocket = await connect(bob, env.serverB);
  try {
    await sendMany(bobSocket, conversation.id, 3, "before");
    const page = await alice.openTab(env.serverA, { window: "looking", open: conversation.id });
    await expectUnread(page, conversation.id, 0);
    // The page counts down at once; its read reaches the server after a debounce. Wait for it, or the total read
    // below races it (seen in a CI rehearsal: 6, the first three still unread on the server).
    await expect.poll(async () => (await alice.snapshot()).totalUnread).toBe(0);
    const size = page.viewportSize()!;

    // Dragged down to its title bar (or the phone's keyboard is up in landscape): the list is out of sight.
    await page.setViewportSize({ width: size.width, height: 110 });
    // The list measures itself when its ResizeObserver reports, before the next frame is painted: arrivals are sent
    // once it has (sent within that frame, the first could be read by the size it had; seen under load, 2 of 6 runs).
    await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
    await sendMany(bobSocket, conversation.id, 3, "while small");
    await expectUnread(page, conversation.id, 3);
    expect((await alice.snapshot()).totalUnread).toBe(3);

    await page.setViewportSize(size);
    await expectUnread(page, conversation.id, 0);
    await expect.poll(async () => (await alice.snapshot()).totalUnread).toBe(0);
  } finally {
    bobSocket.disconnect();
  }
});
