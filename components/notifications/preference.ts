/**
 * The person's own switch for notifications, beside the browser's permission: a browser grants a site once, and
 * offers no easy way back from the page, so Tally keeps an "off" of its own. Kept in this browser's storage per user
 * (`tally:notify:<userId>`), so two people who share a browser each keep theirs; on unless turned off. Storage can be
 * full or forbidden (private modes): then the switch reads on and a change is not kept.
 */

export type NotifyPreference = "on" | "off";

export type PreferenceStorage = Pick<Storage, "getItem" | "setItem" | "removeItem">;

/** The page's localStorage; none where the browser forbids it (reading it throws). */
export function browserStorage(): PreferenceStorage | undefined {
  try {
    return window.localStorage;
  } catch {
    return undefined;
  }
}

export const preferenceKey = (userId: number): string => `tally:notify:${userId}`;

export function readPreference(storage: PreferenceStorage | undefined, userId: number): NotifyPreference {
  try {
    return storage?.getItem(preferenceKey(userId)) === "off" ? "off" : "on";
  } catch {
    return "on";
  }
}

export function writePreference(storage: PreferenceStorage | undefined, userId: number, value: NotifyPreference): void {
  try {
    if (value === "off") storage?.setItem(preferenceKey(userId), "off");
    else storage?.removeItem(preferenceKey(userId));
  } catch {
    // Full or forbidden storage: nothing to keep it in.
  }
}

/** Whether Tally shows notifications: the browser allows them and the person has not turned them off. */
export function notificationsOn(permission: NotificationPermission, preference: NotifyPreference): boolean {
  return permission === "granted" && preference === "on";
}

/**
 * What the header offers: "ask" (the browser has not been asked: "Notify me" asks), the switch in its state, or
 * nothing (no notifications in this browser, or blocked in its site settings, which only the browser can undo).
 */
export type ToggleState = "ask" | "on" | "off" | "hidden";

export function toggleState(
  permission: NotificationPermission | "unsupported",
  preference: NotifyPreference,
): ToggleState {
  if (permission === "default") return "ask";
  if (permission === "granted") return preference;
  return "hidden";
}
