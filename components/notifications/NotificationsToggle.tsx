"use client";

import { useSyncExternalStore } from "react";

type Permission = NotificationPermission | "unsupported";

/** Calls back when the browser's notification permission changes (the prompt answered, or site settings). */
function subscribe(onChange: () => void): () => void {
  let status: PermissionStatus | null = null;
  let gone = false;
  navigator.permissions
    ?.query({ name: "notifications" })
    .then((s) => {
      if (gone) return;
      status = s;
      s.addEventListener("change", onChange);
    })
    .catch(() => undefined);
  return () => {
    gone = true;
    status?.removeEventListener("change", onChange);
  };
}

const current = (): Permission => ("Notification" in window ? Notification.permission : "unsupported");

/**
 * Asks for permission to notify, once the person chooses to: browsers ignore (or penalise) a prompt nobody asked
 * for. Shown only while the browser has not been told yes or no.
 */
export function NotificationsToggle() {
  const permission = useSyncExternalStore(subscribe, current, (): Permission => "unsupported");
  if (permission !== "default") return null;
  return (
    <button
      type="button"
      className="button ghost"
      data-testid="enable-notifications"
      title="Notify me of new messages while Tally is in the background"
      onClick={() => void Notification.requestPermission()}
    >
      Notify me
    </button>
  );
}
