/**
 * What the user's other tabs in this browser are doing, over a BroadcastChannel: each tab says whether someone
 * is looking at it (visible and focused) whenever that changes, answers when a new tab asks, and says goodbye
 * when it goes. Enough to decide "is the person looking at Tally anywhere?" without a server round trip.
 */
type TabMessage =
  { type: "state"; tab: string; looking: boolean } | { type: "ask"; tab: string } | { type: "gone"; tab: string };

export interface TabPresence {
  /** This tab's own state changed. */
  setLooking(looking: boolean): void;
  /** Whether this tab or any other open tab of the user is being looked at. */
  anyLooking(): boolean;
  close(): void;
}

export function createTabPresence(channel: BroadcastChannel | null, tab: string, looking: boolean): TabPresence {
  const others = new Map<string, boolean>();
  let mine = looking;
  const post = (message: TabMessage) => channel?.postMessage(message);
  const onMessage = (event: MessageEvent<TabMessage>) => {
    const m = event.data;
    if (m.tab === tab) return;
    if (m.type === "state") others.set(m.tab, m.looking);
    else if (m.type === "gone") others.delete(m.tab);
    else post({ type: "state", tab, looking: mine });
  };
  channel?.addEventListener("message", onMessage);
  post({ type: "ask", tab });
  post({ type: "state", tab, looking: mine });
  return {
    setLooking(next) {
      if (next === mine) return;
      mine = next;
      post({ type: "state", tab, looking: mine });
    },
    anyLooking: () => mine || [...others.values()].some(Boolean),
    close() {
      post({ type: "gone", tab });
      channel?.removeEventListener("message", onMessage);
      channel?.close();
    },
  };
}
