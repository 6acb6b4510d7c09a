"use client";

import { useChatStore } from "@/components/providers/ChatProvider";
import { selectShownTotal, selectUser } from "@/components/store/selectors";
import { TallyMark } from "./TallyMark";

function AppBadge() {
  const total = useChatStore(selectShownTotal);
  return (
    <span
      className={total > 0 ? "badge" : "badge badge-zero"}
      data-testid="app-badge"
      data-count={total}
      aria-label={`${total} unread`}
    >
      {total}
    </span>
  );
}

export function Header() {
  const user = useChatStore(selectUser);
  const signOut = useChatStore((s) => s.signOut);

  return (
    <header className="topbar">
      <div className="brand">
        <TallyMark />
        <span className="brand-name">Tally</span>
        <AppBadge />
      </div>
      <div className="account">
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
