"use client";

import { useEffect, useState } from "react";

/**
 * Asks for permission to notify, once the person chooses to: browsers ignore (or penalise) a prompt nobody asked
 * for. Shown only while the browser has not been told yes or no.
 */
export function NotificationsToggle() {
  const [permission, setPermission] = useState<NotificationPermission | "unsupported">("unsupported");
  useEffect(() => {
    if ("Notification" in window) setPermission(Notification.permission);
  }, []);
  if (permission !== "default") return null;
  return (
    <button
      type="button"
      className="button ghost"
      data-testid="enable-notifications"
      title="Notify me of new messages while Tally is in the background"
      onClick={() => void Notification.requestPermission().then(setPermission)}
    >
      Notify me
    </button>
  );
}
