import type { Page } from "@playwright/test";
import type { MessageDTO, Snapshot, UnreadUpdate, UserDTO } from "../server/contracts/index.ts";
import { countsAnything, toUnreadEntry } from "../server/contracts/dto.ts";
import { expect, test } from "./fixtures.ts";
import {
  conversationItem,
  expectMentions,
  expectMuted,
  expectTotalUnread,
  expectUnread,
  openRowMenu,
} from "./support/tally-page.ts";
import { scriptServer, scriptedConversation } from "./support/scripted-socket.ts";

/*
 * What the list shows for muted, mentioned and marked conversations, and how its row menu and shortcuts behave,
 * against a scripted server (support/scripted-socket.ts) that serves snapshots and acknowledgements written here
 * from the contract. The real server's side is e2e/mute-and-mark.spec.ts.
 */

/** Set to a folder to keep screenshots of the states these tests reach (for looking at them, not for asserting). */
const SHOTS = process.env.TALLY_SCREENSHOTS;
async function shot(page: Page, name: string): Promise<void> {
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/${name}.png` });
}

const maya: UserDTO = { id: 101, name: "maya" };
const sam: UserDTO = { id: 102, name: "sam" };
const lee: UserDTO = { id: 103, name: "lee" };
const ines: UserDTO = { id: 104, name: "ines" };

function message(conversationId: number, seq: number, sender: UserDTO, content: string, minute: number): MessageDTO {
  return {
    id: conversationId * 100 + seq,
    conversationId,
    seq,
    senderId: sender.id,
    senderName: sender.name,
    content,
    createdAt: `2026-11-23T09:${String(minute).padStart(2, "0")}:00.000Z`,
    clientMsgId: `scripted-${conversationId}-${seq}`,
  };
}

const everyone = [maya, sam, lee, ines];
const conversations = [
  scriptedConversation(1, "Design crew", everyone, message(1, 40, ines, "@maya can you check the icons?", 50), {
    unreadCount: 7,
    mentionCount: 1,
    muted: true,
  }),
  scriptedConversation(2, "Launch room", everyone, message(2, 12, sam, "@maya @lee go/no-go at 3?", 45), {
    unreadCount: 3,
    mentionCount: 2,
  }),
  scriptedConversation(3, "sam", [maya, sam], message(3, 5, sam, "lunch?", 40), { unreadCount: 2 }),
  scriptedConversation(4, "Weekly digest", everyone, message(4, 90, lee, "Issue #48 is out", 30), {
    unreadCount: 12,
    muted: true,
  }),
  scriptedConversation(5, "lee", [maya, lee], message(5, 9, maya, "see you then", 20), {
    unreadCount: 1,
    markedUnread: true,
    markVersion: 1,
  }),
  // Read to its end, and one with no message yet: what "Mark as unread" can and cannot mark.
  scriptedConversation(6, "ines", [maya, ines], message(6, 4, ines, "thanks!", 10)),
  scriptedConversation(7, "Book club", [maya, sam, ines], null),
];
// Σ unread over unmuted (3 + 2 + 1) + Σ mentions over muted (1 + 0).
const snapshot: Snapshot = {
  conversations,
  more: false,
  conversationIds: conversations.map((c) => c.id),
  unread: conversations.filter(countsAnything).map((c) => toUnreadEntry(c.id, c)),
  totalUnread: 7,
  totalMentions: 3,
  version: 10,
  epoch: "scripted",
};

function unreadUpdate(conversationId: number, fields: Omit<UnreadUpdate, "conversationId" | "epoch">): UnreadUpdate {
  return { conversationId, epoch: "scripted", ...fields };
}

test("muted rows keep a greyed count out of the badge, mentions show an @ badge, a mark counts 1", async ({
  newContext,
  env,
}) => {
  const page = await (await newContext()).newPage();
  await page.setViewportSize({ width: 1280, height: 800 });
  await scriptServer(page, maya, snapshot);
  await page.goto(env.serverA);

  await expectTotalUnread(page, 7);
  await expectUnread(page, 1, 7, 7);
  await expectMuted(page, 1, true);
  await expectMentions(page, 1, 1);
  await expectMuted(page, 2, false);
  await expectMentions(page, 2, 2);
  await expectMuted(page, 4, true);
  await expectMentions(page, 4, 0);
  await expectUnread(page, 5, 1, 7);
  await expect(conversationItem(page, 1).getByTestId("conversation-badge")).toHaveAccessibleName("7 unread, muted");
  await expect(conversationItem(page, 2).getByTestId("mention-badge")).toHaveAccessibleName("2 mentions");
  await shot(page, "muted-and-mentions");

  await page.setViewportSize({ width: 375, height: 740 });
  await expectTotalUnread(page, 7);
  await shot(page, "muted-and-mentions-375");
});

test("the row menu mutes and marks through the store, by pointer, keyboard and shortcut", async ({
  newContext,
  env,
}) => {
  const page = await (await newContext()).newPage();
  await page.setViewportSize({ width: 1280, height: 800 });
  const server = await scriptServer(page, maya, snapshot);
  await page.goto(env.serverA);
  await expectTotalUnread(page, 7);

  // Keyboard: the menu opens on its first item, the arrows move, Escape closes it back onto its button.
  const menu = await openRowMenu(page, 6, "keyboard");
  const muteItem = menu.getByTestId("row-mute");
  await expect(muteItem).toBeFocused();
  await expect(muteItem).toContainText("Mute");
  await expect(muteItem).toContainText("Alt+Shift+M");
  await expect(menu.getByTestId("row-mark-unread")).toContainText("Alt+Shift+U");
  await expect(menu.getByTestId("row-mark-unread")).not.toHaveAttribute("aria-disabled");
  await page.keyboard.press("ArrowDown");
  await expect(menu.getByTestId("row-mark-unread")).toBeFocused();
  await page.keyboard.press("ArrowDown");
  await expect(muteItem).toBeFocused();
  await shot(page, "row-menu");
  await page.setViewportSize({ width: 375, height: 740 });
  await shot(page, "row-menu-375");
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.keyboard.press("Escape");
  await expect(menu).toBeHidden();
  await expect(page.locator("li", { has: conversationItem(page, 6) }).getByTestId("row-menu-button")).toBeFocused();

  // Unmute the muted group by pointer: the command goes out, nothing changes until its acknowledgement.
  const unmuteMenu = await openRowMenu(page, 1);
  await expect(unmuteMenu.getByTestId("row-mute")).toContainText("Unmute");
  await unmuteMenu.getByTestId("row-mute").click();
  await expect
    .poll(() => server.commands.map((c) => [c.event, c.input]))
    .toEqual([["conversation:mute", { conversationId: 1, muted: false }]]);
  await expectMuted(page, 1, true);
  await expectTotalUnread(page, 7);
  server.ack(server.commands[0]?.ackId ?? -1, {
    ok: true,
    changed: true,
    unread: unreadUpdate(1, {
      unreadCount: 7,
      mentionCount: 1,
      muted: false,
      markedUnread: false,
      markVersion: 0,
      totalUnread: 13,
      totalMentions: 3,
      version: 11,
    }),
  });
  await expectMuted(page, 1, false);
  await expectUnread(page, 1, 7, 13);

  // "Mark as unread" is offered only where it would show something new: a row already unread, or with no message
  // yet, says why, and neither its item nor its shortcut sends anything.
  // Rows 4 (muted, its count greyed) and 5 (marked) show something unread too.
  for (const [id, why] of [
    [3, "Already unread"],
    [4, "Already unread"],
    [5, "Already unread"],
    [7, "No messages yet"],
  ] as const) {
    const rowMenu = await openRowMenu(page, id, "keyboard");
    await page.keyboard.press("ArrowDown");
    const item = rowMenu.getByTestId("row-mark-unread");
    await expect(item).toBeFocused();
    await expect(item).toHaveAttribute("aria-disabled", "true");
    await expect(item).toContainText(why);
    await expect(item).toHaveAccessibleDescription(why);
    await expect(item).not.toHaveAttribute("aria-keyshortcuts");
    await expect(item).toBeDisabled();
    await page.keyboard.press("Enter");
    // A click on the greyed item, as a person may try (Playwright would otherwise wait for it to be enabled).
    await item.click({ force: true });
    await expect(rowMenu).toBeVisible();
    if (id === 3) await shot(page, "row-menu-already-unread");
    await page.keyboard.press("Escape");
    await conversationItem(page, id).focus();
    await page.keyboard.press("Alt+Shift+U");
  }
  // A command sent after them comes right after the unmute: they sent nothing.
  await conversationItem(page, 3).focus();
  await page.keyboard.press("Alt+Shift+M");
  await expect
    .poll(() => server.commands.map((c) => [c.event, c.input]))
    .toEqual([
      ["conversation:mute", { conversationId: 1, muted: false }],
      ["conversation:mute", { conversationId: 3, muted: true }],
    ]);

  // Alt+Shift+U on a focused row that is read marks it.
  await conversationItem(page, 6).focus();
  await page.keyboard.press("Alt+Shift+U");
  await expect.poll(() => server.commands.at(-1)?.event).toBe("conversation:markUnread");
  expect(server.commands.at(-1)?.input).toEqual({ conversationId: 6 });
  // Alt+Shift+M on the focused row mutes it.
  await page.keyboard.press("Alt+Shift+M");
  await expect.poll(() => server.commands.at(-1)?.input).toEqual({ conversationId: 6, muted: true });
});
