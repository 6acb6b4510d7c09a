"use client";

import { useEffect, useId, useLayoutEffect, useRef, useState, type KeyboardEvent } from "react";
import { ROW_SHORTCUTS } from "./row-shortcut";
import { MoreIcon } from "./MoreIcon";

interface RowMenuProps {
  title: string;
  muted: boolean;
  /** Why muting or unmuting would not be done now ("Not while offline"), shown on the disabled item; null: it would. */
  muteRefusal: string | null;
  /** Why marking it unread would do nothing ("Already unread"), shown on the disabled item; null: it would. */
  markUnreadRefusal: string | null;
  onMute(): void;
  onMarkUnread(): void;
}

/**
 * The menu of one conversation row, following the WAI-ARIA menu button pattern: Enter, Space or the arrows open
 * it on an item, the arrows, Home and End move, Escape closes it back onto its button, Tab leaves it.
 */
export function RowMenu({ title, muted, muteRefusal, markUnreadRefusal, onMute, onMarkUnread }: RowMenuProps) {
  const [open, setOpen] = useState<false | "first" | "last">(false);
  const [above, setAbove] = useState(false);
  const menuId = useId();
  const refusalId = useId();
  const muteRefusalId = useId();
  const trigger = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLDivElement>(null);

  const items = () => Array.from(menu.current?.querySelectorAll<HTMLElement>('[role="menuitem"]') ?? []);

  useLayoutEffect(() => {
    if (!open) return;
    // The list scrolls and clips: a menu that would run past its bottom opens above the row instead.
    const list = trigger.current?.closest(".conversation-list");
    const box = menu.current?.getBoundingClientRect();
    const bounds = list?.getBoundingClientRect();
    if (box && bounds) setAbove(box.bottom > bounds.bottom && box.height < box.top - bounds.top);
    const all = items();
    (open === "first" ? all[0] : all.at(-1))?.focus();
  }, [open]);

  useEffect(() => {
    if (!open) return;
    const onPointerDown = (event: PointerEvent) => {
      const target = event.target as Node;
      if (!menu.current?.contains(target) && !trigger.current?.contains(target)) setOpen(false);
    };
    document.addEventListener("pointerdown", onPointerDown);
    return () => document.removeEventListener("pointerdown", onPointerDown);
  }, [open]);

  const close = (refocus: boolean) => {
    setOpen(false);
    setAbove(false);
    if (refocus) trigger.current?.focus();
  };

  const choose = (action: () => void) => {
    close(true);
    action();
  };

  const onTriggerKeyDown = (event: KeyboardEvent<HTMLButtonElement>) => {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      setOpen(event.key === "ArrowDown" ? "first" : "last");
    }
  };

  const onMenuKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    const all = items();
    const at = all.indexOf(document.activeElement as HTMLElement);
    const move = (index: number) => all[(index + all.length) % all.length]?.focus();
    switch (event.key) {
      case "ArrowDown":
        move(at + 1);
        break;
      case "ArrowUp":
        move(at - 1);
        break;
      case "Home":
        move(0);
        break;
      case "End":
        move(all.length - 1);
        break;
      case "Escape":
        close(true);
        break;
      case "Tab":
        close(false);
        return;
      default:
        return;
    }
    event.preventDefault();
    event.stopPropagation();
  };

  return (
    <div className="row-menu">
      <button
        ref={trigger}
        type="button"
        className="row-menu-button"
        data-testid="row-menu-button"
        aria-label={`Options for ${title}`}
        aria-haspopup="menu"
        aria-expanded={open !== false}
        aria-controls={open ? menuId : undefined}
        onClick={() => (open ? close(false) : setOpen("first"))}
        onKeyDown={onTriggerKeyDown}
      >
        <MoreIcon />
      </button>
      {open && (
        <div
          ref={menu}
          id={menuId}
          role="menu"
          aria-label={`Options for ${title}`}
          className={`row-menu-list${above ? " above" : ""}`}
          data-testid="row-menu"
          onKeyDown={onMenuKeyDown}
        >
          <button
            type="button"
            role="menuitem"
            tabIndex={-1}
            data-testid="row-mute"
            aria-keyshortcuts={muteRefusal === null ? ROW_SHORTCUTS.mute.keys : undefined}
            aria-disabled={muteRefusal !== null ? "true" : undefined}
            aria-describedby={muteRefusal !== null ? muteRefusalId : undefined}
            onClick={() => muteRefusal === null && choose(onMute)}
          >
            <span>{muted ? "Unmute" : "Mute"}</span>
            {muteRefusal === null ? (
              <kbd aria-hidden="true">{ROW_SHORTCUTS.mute.keys}</kbd>
            ) : (
              <span id={muteRefusalId} className="menu-item-note">
                {muteRefusal}
              </span>
            )}
          </button>
          <button
            type="button"
            role="menuitem"
            tabIndex={-1}
            data-testid="row-mark-unread"
            // Disabled items stay focusable in a menu (WAI-ARIA), so the arrows still reach it and it says why, as
            // its description; the shortcut it would name does nothing then.
            aria-keyshortcuts={markUnreadRefusal === null ? ROW_SHORTCUTS.markUnread.keys : undefined}
            aria-disabled={markUnreadRefusal !== null ? "true" : undefined}
            aria-describedby={markUnreadRefusal !== null ? refusalId : undefined}
            onClick={() => markUnreadRefusal === null && choose(onMarkUnread)}
          >
            <span>Mark as unread</span>
            {markUnreadRefusal === null ? (
              <kbd aria-hidden="true">{ROW_SHORTCUTS.markUnread.keys}</kbd>
            ) : (
              <span id={refusalId} className="menu-item-note">
                {markUnreadRefusal}
              </span>
            )}
          </button>
        </div>
      )}
    </div>
  );
}
