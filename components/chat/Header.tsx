"use client";

import { NotificationsToggle } from "@/components/notifications/NotificationsToggle";
import { useChatStore } from "@/components/providers/ChatProvider";
import { selectShownTotal, selectUser } from "@/components/store/selectors";
import { TallyMark } from "./TallyMark";

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
        <button type="button" className="button ghost" data-testid="sign-out" onClick={() => void signOut()}>
          Sign out
        </button>
        <button
          type="button"
          className="button ghost sign-out-everywhere"
          data-testid="sign-out-everywhere"
          title="End every session of this account, on every device"
          onClick={() => void signOut(true)}
        >
          Sign out everywhere
        </button>
      </div>
    </header>
  );
}
