import { describe, expect, it } from "vitest";
import { notificationsOn, preferenceKey, readPreference, toggleState, writePreference } from "./preference";

function memoryStorage() {
  const items = new Map<string, string>();
  return {
    items,
    getItem: (key: string) => items.get(key) ?? null,
    setItem: (key: string, value: string) => void items.set(key, value),
    removeItem: (key: string) => void items.delete(key),
  };
}

describe("the person's own notifications switch", () => {
  it("is on until turned off, per user, and on again when turned on", () => {
    const storage = memoryStorage();
    expect(readPreference(storage, 1)).toBe("on");
    writePreference(storage, 1, "off");
    expect(readPreference(storage, 1)).toBe("off");
    expect(readPreference(storage, 2)).toBe("on");
    expect([...storage.items]).toEqual([[preferenceKey(1), "off"]]);
    writePreference(storage, 1, "on");
    expect(readPreference(storage, 1)).toBe("on");
    expect(storage.items.size).toBe(0);
  });

  it("reads on, and keeps nothing, where storage is missing or forbidden", () => {
    const forbidden = {
      getItem: (): string | null => {
        throw new DOMException("denied", "SecurityError");
      },
      setItem: () => {
        throw new DOMException("full", "QuotaExceededError");
      },
      removeItem: () => undefined,
    };
    expect(readPreference(forbidden, 1)).toBe("on");
    expect(() => writePreference(forbidden, 1, "off")).not.toThrow();
    expect(readPreference(undefined, 1)).toBe("on");
  });

  it("notifies only with the browser's permission and the switch on", () => {
    expect(notificationsOn("granted", "on")).toBe(true);
    expect(notificationsOn("granted", "off")).toBe(false);
    expect(notificationsOn("default", "on")).toBe(false);
    expect(notificationsOn("denied", "on")).toBe(false);
  });

  it("offers Notify me before the browser was asked, then the switch in its state, nothing once blocked", () => {
    expect(toggleState("default", "on")).toBe("ask");
    expect(toggleState("default", "off")).toBe("ask");
    expect(toggleState("granted", "on")).toBe("on");
    expect(toggleState("granted", "off")).toBe("off");
    expect(toggleState("denied", "on")).toBe("hidden");
    expect(toggleState("unsupported", "on")).toBe("hidden");
  });
});
