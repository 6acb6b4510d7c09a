"use client";

import { useEffect, useId, useRef, useState } from "react";
import { NotificationsToggle } from "@/components/notifications/NotificationsToggle";
import { useChatStore } from "@/components/providers/ChatProvider";
import { selectShownTotal, selectUser } from "@/components/store/selectors";
import { TallyMark } from "./TallyMark";
import { MoreIcon } from "./MoreIcon";

/**
 * The total. At 0 it is only hidden from sight, not removed: screen readers still say "No unread messages",
 * and tests keep reading its data-count.
 */
function AppBadge() {
  const total = useChatStore(selectShownTotal);
  return (
    <span
      className={total > 0 ? "badge" : "badge visually-hidden"}
      data-testid="app-badge"
      data-count={total}
      role="img"
      aria-label={total > 0 ? `${total} unread ${total === 1 ? "message" : "messages"}` : "No unread messages"}
    >
      {total}
    </span>
  );
}

/**
 * "Sign out" and "Sign out everywhere" in the header where there is room; on a narrow screen both behind one "More"
 * button (a disclosure: Escape, a tap elsewhere or the focus leaving it closes it), so a phone can still end the
 * sessions of a lost device and keeps room for the badge beside the brand.
 */
function SignOutButtons({ signOut }: { signOut: (everywhere: boolean) => void }) {
  const [open, setOpen] = useState(false);
  const panelId = useId();
  const box = useRef<HTMLDivElement>(null);
  const trigger = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (!open) return;
    const onPointerDown = (event: PointerEvent) => {
      if (!box.current?.contains(event.target as Node)) setOpen(false);
    };
    const onKeyDown = (event: KeyboardEvent) => {
      if (event.key !== "Escape") return;
      setOpen(false);
      trigger.current?.focus();
    };
    document.addEventListener("pointerdown", onPointerDown);
    document.addEventListener("keydown", onKeyDown);
    return () => {
      document.removeEventListener("pointerdown", onPointerDown);
      document.removeEventListener("keydown", onKeyDown);
    };
  }, [open]);

  return (
    <div
      className="account-more"
      ref={box}
      data-open={open}
      // Tab past its last button (or Shift+Tab before the trigger) closes it: an open panel would cover what has the
      // focus next. No related target (a click on something that takes no focus) is the pointerdown's to judge.
      onBlur={(event) => {
        const next = event.relatedTarget;
        if (open && next !== null && !box.current?.contains(next)) setOpen(false);
      }}
    >
      <button
        ref={trigger}
        type="button"
        className="button ghost account-more-button"
        data-testid="account-more"
        aria-label="Sign out options"
        aria-expanded={open}
        aria-controls={panelId}
        onClick={() => setOpen(!open)}
      >
        <MoreIcon />
      </button>
      <div className="account-more-panel" id={panelId}>
        <button
          type="button"
          className="button ghost"
          data-testid="sign-out"
          onClick={() => {
            setOpen(false);
            signOut(false);
          }}
        >
          Sign out
        </button>
        <button
          type="button"
          className="button ghost"
          data-testid="sign-out-everywhere"
          title="End every session of this account, on every device"
          onClick={() => {
            setOpen(false);
            signOut(true);
          }}
        >
          Sign out everywhere
        </button>
      </div>
    </div>
  );
}

export function Header() {
  const user = useChatStore(selectUser);
  const signOut = useChatStore((s) => s.signOut);
  const lab = useChatStore((s) => s.lab);

  return (
    <header className="topbar">
      <div className="brand">
        <TallyMark />
        <h1 className="brand-name">Tally</h1>
        <AppBadge />
      </div>
      <div className="account">
        {lab && (
          <a className="button ghost" href="/lab" data-testid="lab-link" title="The consistency lab">
            Lab
          </a>
        )}
        <NotificationsToggle />
        <span className="user-name" data-testid="current-user">
          {user?.name}
        </span>
        <SignOutButtons signOut={(everywhere) => void signOut(everywhere)} />
      </div>
    </header>
  );
}
