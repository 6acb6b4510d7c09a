import { describe, expect, it } from "vitest";
import { rowShortcut, type ShortcutEvent } from "./row-shortcut";

const key = (code: string, mods: Partial<ShortcutEvent> = {}): ShortcutEvent => ({
  altKey: true,
  shiftKey: true,
  ctrlKey: false,
  metaKey: false,
  code,
  ...mods,
});

describe("rowShortcut", () => {
  it.each([
    ["Alt+Shift+M", key("KeyM"), "mute"],
    ["Alt+Shift+U", key("KeyU"), "markUnread"],
    ["Alt+M", key("KeyM", { shiftKey: false }), null],
    ["Shift+M", key("KeyM", { altKey: false }), null],
    ["Ctrl+Alt+Shift+M", key("KeyM", { ctrlKey: true }), null],
    ["Cmd+Alt+Shift+U", key("KeyU", { metaKey: true }), null],
    ["Alt+Shift+K", key("KeyK"), null],
  ] as const)("%s → %s", (_name, event, command) => {
    expect(rowShortcut(event)).toBe(command);
  });
});
