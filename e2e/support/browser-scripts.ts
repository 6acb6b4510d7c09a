/*
 * Scripts that run in the page before the app does (context.addInitScript). Playwright sends each function's
 * source text, so each must be self-contained: no imports, no helpers from this module.
 */

/** Whether a tab is in front (visible) and the window holding it has the keyboard (focused). */
export interface WindowState {
  visible: boolean;
  focused: boolean;
}

/** One value a badge or the tab title held, in the order the page went through them. */
export interface BadgeSample {
  kind: "app" | "conversation" | "title";
  /** The conversation id, for kind "conversation". */
  conversationId?: string;
  value: string | null;
}

/** The app badge and the sum of the visible rows' shares (rowsShare), as one DOM update left them. */
export interface BadgeSum {
  app: number;
  rows: number;
}

export type TestWindow = Window & {
  __tallyWindow?: { set(next: Partial<WindowState>): void; get(): WindowState };
  __tallyBadgeLog?: BadgeSample[];
  __tallyBadgeSums?: BadgeSum[];
};

export const WINDOW_STATE_KEY = "tally-e2e-window-state";

/**
 * Makes document.visibilityState, document.hidden and document.hasFocus() answer what the test says, and fires
 * visibilitychange / focus / blur when it changes. Headless Chromium reports every page as visible and (with
 * Playwright's focus emulation) focused, whichever is "in front", and fires those events when Playwright or
 * bringToFront() reshuffles pages; so the browser's own events are swallowed and the test alone decides which
 * tab is looking. The state lives in sessionStorage so that a reload keeps it, as a real background tab would.
 */
export function installWindowControl(): void {
  const key = "tally-e2e-window-state";
  let state: WindowState = { visible: true, focused: true };
  try {
    const saved = window.sessionStorage.getItem(key);
    if (saved !== null) state = JSON.parse(saved) as WindowState;
  } catch {
    // Opaque origins (about:blank) have no sessionStorage; the default state applies.
  }
  Object.defineProperty(document, "visibilityState", {
    configurable: true,
    get: () => (state.visible ? "visible" : "hidden"),
  });
  Object.defineProperty(document, "hidden", { configurable: true, get: () => !state.visible });
  Object.defineProperty(document, "hasFocus", { configurable: true, value: () => state.focused });

  const synthetic = new WeakSet<Event>();
  // Capture listeners at the target run before the app's own listeners there, so stopping here hides the event.
  const swallow = (event: Event): void => {
    if (!synthetic.has(event)) event.stopImmediatePropagation();
  };
  window.addEventListener("focus", (e) => e.target === window && swallow(e), true);
  window.addEventListener("blur", (e) => e.target === window && swallow(e), true);
  document.addEventListener("visibilitychange", swallow, true);

  const fire = (target: EventTarget, event: Event): void => {
    synthetic.add(event);
    target.dispatchEvent(event);
  };
  (window as TestWindow).__tallyWindow = {
    get: () => ({ ...state }),
    set(next) {
      const previous = state;
      state = { ...state, ...next };
      try {
        window.sessionStorage.setItem(key, JSON.stringify(state));
      } catch {
        // See above.
      }
      // A browser blurs a window before hiding its tab, and shows a tab before focusing it.
      if (previous.focused && !state.focused) fire(window, new FocusEvent("blur"));
      if (previous.visible !== state.visible) fire(document, new Event("visibilitychange", { bubbles: true }));
      if (!previous.focused && state.focused) fire(window, new FocusEvent("focus"));
    },
  };
}

/**
 * Records every value the app badge (data-count), each conversation row (data-unread) and the title take, old
 * values included, so a badge that flashed for one frame is caught even though no polling would see it.
 */
export function installBadgeRecorder(): void {
  const log: BadgeSample[] = [];
  (window as TestWindow).__tallyBadgeLog = log;
  const sample = (element: Element, value: string | null): void => {
    const testId = element.getAttribute("data-testid");
    if (testId === "app-badge") log.push({ kind: "app", value });
    else if (testId === "conversation-item") {
      log.push({ kind: "conversation", conversationId: element.getAttribute("data-conversation-id") ?? "", value });
    }
  };
  const sampleTree = (node: Node): void => {
    if (!(node instanceof Element)) return;
    if (node.matches("[data-testid=app-badge]")) sample(node, node.getAttribute("data-count"));
    if (node.matches("[data-testid=conversation-item]")) sample(node, node.getAttribute("data-unread"));
    for (const badge of node.querySelectorAll("[data-testid=app-badge]"))
      sample(badge, badge.getAttribute("data-count"));
    for (const row of node.querySelectorAll("[data-testid=conversation-item]")) {
      sample(row, row.getAttribute("data-unread"));
    }
  };
  let title: string | null = null;
  const sampleTitle = (): void => {
    if (document.title === title) return;
    title = document.title;
    log.push({ kind: "title", value: title });
  };
  new MutationObserver((records) => {
    for (const record of records) {
      if (record.type === "attributes" && record.target instanceof Element) {
        sample(record.target, record.oldValue);
        sample(record.target, record.target.getAttribute(record.attributeName ?? ""));
      } else if (record.type === "childList") {
        for (const node of record.addedNodes) sampleTree(node);
        if (record.target.nodeName === "TITLE") {
          for (const node of record.removedNodes) log.push({ kind: "title", value: node.textContent });
        }
      } else if (record.type === "characterData" && record.target.parentNode?.nodeName === "TITLE") {
        log.push({ kind: "title", value: record.oldValue });
      }
    }
    sampleTitle();
  }).observe(document, {
    subtree: true,
    childList: true,
    characterData: true,
    characterDataOldValue: true,
    attributes: true,
    attributeOldValue: true,
    attributeFilter: ["data-count", "data-unread"],
  });
}

/** The name of the binding through which every page reports a state where the app badge ≠ Σ of the rows. */
export const BADGE_MISMATCH_BINDING = "__tallyBadgeMismatch";

/**
 * In every page of every test: after each DOM update (one MutationObserver batch, so one React commit), the app
 * badge (data-count) must equal the sum of the rows' shares, by the rule of docs/consistency.md: a row adds its
 * count (data-unread), or while muted (data-muted="true") only its mentions (data-mentions). A state where they
 * differ is reported at once through the context's binding, so a reload or a closed page cannot hide it; the
 * fixture fails the test.
 */
export function installBadgeSumCheck(): void {
  const report = (window as unknown as Record<string, unknown>)["__tallyBadgeMismatch"];
  if (typeof report !== "function") return;
  let reported = 0;
  const check = (): void => {
    const badge = document.querySelector("[data-testid=app-badge]");
    if (!badge) return;
    let rows = 0;
    for (const row of document.querySelectorAll("[data-testid=conversation-item]")) {
      const muted = row.getAttribute("data-muted") === "true";
      rows += Number(row.getAttribute(muted ? "data-mentions" : "data-unread") ?? "0");
    }
    // What the conversations not listed yet add (the list's end says it; muted ones already count their mentions).
    rows += Number(document.querySelector("[data-testid=older-unread]")?.getAttribute("data-unread") ?? "0");
    const app = Number(badge.getAttribute("data-count"));
    // A bounded report: one broken state usually repeats on every later update.
    if (app !== rows && reported < 20) {
      reported += 1;
      void (report as (sample: { app: number; rows: number; url: string }) => Promise<void>)({
        app,
        rows,
        url: location.href,
      });
    }
  };
  const start = (): void => {
    check();
    new MutationObserver(check).observe(document.documentElement, {
      subtree: true,
      childList: true,
      attributes: true,
      attributeFilter: ["data-count", "data-unread", "data-muted", "data-mentions"],
    });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start, { once: true });
  else start();
}
