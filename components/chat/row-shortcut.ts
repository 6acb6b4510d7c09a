/**
 * Keyboard shortcuts of a conversation row. Alt+Shift with a letter: Ctrl/Cmd combinations belong to the browser
 * and the composer's editing keys, plain Alt+letter to menus on Windows and Linux. Matched by `code` (the key's
 * place), because Alt changes the character a key types on macOS and on many layouts.
 */
export type RowCommand = "mute" | "markUnread";

export const ROW_SHORTCUTS: Record<RowCommand, { keys: string; code: string }> = {
  mute: { keys: "Alt+Shift+M", code: "KeyM" },
  markUnread: { keys: "Alt+Shift+U", code: "KeyU" },
};

export type ShortcutEvent = Pick<KeyboardEvent, "altKey" | "shiftKey" | "ctrlKey" | "metaKey" | "code">;

export function rowShortcut(event: ShortcutEvent): RowCommand | null {
  if (!event.altKey || !event.shiftKey || event.ctrlKey || event.metaKey) return null;
  if (event.code === ROW_SHORTCUTS.mute.code) return "mute";
  if (event.code === ROW_SHORTCUTS.markUnread.code) return "markUnread";
  return null;
}
