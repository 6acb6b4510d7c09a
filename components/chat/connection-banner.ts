/** What the connection banner says, decided from explicit facts so it is tested without clocks or sockets. */

export interface ConnectionFacts {
  connected: boolean;
  /** This page has been connected since the person signed in: losing it now is news. */
  everConnected: boolean;
  /** The first connect has taken longer than a moment (a fresh page load normally connects within one). */
  firstConnectSlow: boolean;
  /** The browser's own idea (navigator.onLine): false means no network at all. */
  online: boolean;
  /** Messages waiting to go out. */
  queued: number;
}

export interface Banner {
  state: "offline" | "reconnecting" | "connecting";
  text: string;
}

/** How long a fresh page may take to connect before the banner says so. */
export const FIRST_CONNECT_GRACE_MS = 3000;

export function connectionBanner(facts: ConnectionFacts): Banner | null {
  if (facts.connected || (!facts.everConnected && !facts.firstConnectSlow)) return null;
  const state = !facts.online ? "offline" : facts.everConnected ? "reconnecting" : "connecting";
  const headline = {
    offline: "You're offline — messages will be sent when the connection is back.",
    reconnecting: "Reconnecting…",
    connecting: "Connecting…",
  }[state];
  const waiting =
    facts.queued === 0 ? "" : ` ${facts.queued} ${facts.queued === 1 ? "message" : "messages"} waiting to be sent.`;
  return { state, text: headline + waiting };
}
