"use client";

import { useSyncExternalStore } from "react";
import { useChatStore } from "@/components/providers/ChatProvider";
import { selectUser } from "@/components/store/selectors";
import { browserStorage, readPreference, toggleState, writePreference, type NotifyPreference } from "./preference";

type Permission = NotificationPermission | "unsupported";

/** Fired on the window when this tab changes the switch ("storage" events reach only the other tabs). */
const PREFERENCE_CHANGED = "tally:notify-preference";

/**
 * Calls back when the browser's notification permission changes (the prompt answered, or site settings), or the
 * switch is flipped in this tab or another.
 */
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
  window.addEventListener("storage", onChange);
  window.addEventListener(PREFERENCE_CHANGED, onChange);
  return () => {
    gone = true;
    status?.removeEventListener("change", onChange);
    window.removeEventListener("storage", onChange);
    window.removeEventListener(PREFERENCE_CHANGED, onChange);
  };
}

const current = (): Permission => ("Notification" in window ? Notification.permission : "unsupported");

function setPreference(userId: number, value: NotifyPreference): void {
  writePreference(browserStorage(), userId, value);
  window.dispatchEvent(new Event(PREFERENCE_CHANGED));
}

/**
 * "Notify me" asks for permission to notify, once the person chooses to: browsers ignore (or penalise) a prompt
 * nobody asked for. Once allowed, a switch that says its state turns Tally's notifications off and on again in this
 * browser (preference.ts); the browser's permission stays as it is.
 */
export function NotificationsToggle() {
  const userId = useChatStore(selectUser)?.id;
  const permission = useSyncExternalStore(subscribe, current, (): Permission => "unsupported");
  const preference = useSyncExternalStore(
    subscribe,
    () => (userId === undefined ? "on" : readPreference(browserStorage(), userId)),
    (): NotifyPreference => "on",
  );
  const state = toggleState(permission, preference);
  if (userId === undefined || state === "hidden") return null;
  if (state === "ask") {
    return (
      <button
        type="button"
        className="button ghost"
        data-testid="enable-notifications"
        title="Notify me of new messages while Tally is in the background"
        onClick={() =>
          void Notification.requestPermission().then((answer) => {
            if (answer === "granted") setPreference(userId, "on");
          })
        }
      >
        Notify me
      </button>
    );
  }
  const on = state === "on";
  return (
    <button
      type="button"
      role="switch"
      aria-checked={on}
      aria-label="Notifications"
      className={on ? "button ghost notify-switch" : "button ghost notify-switch off"}
      data-testid="notifications-toggle"
      data-state={state}
      title={
        on
          ? "Tally notifies you of new messages while it is in the background; click to stop"
          : "Tally does not notify you of new messages; click to be notified again"
      }
      onClick={() => setPreference(userId, on ? "off" : "on")}
    >
      {/* One span: the button lays out its children apart. A phone's header has room for one short word. */}
      <span>
        <span className="wide-only">Notifications</span>
        <span className="narrow-only">Notify</span>: {on ? "on" : "off"}
      </span>
    </button>
  );
}
