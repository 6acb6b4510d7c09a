import { describe, expect, it } from "vitest";
import { connectionBanner, type ConnectionFacts } from "./connection-banner";

const facts = (over: Partial<ConnectionFacts>): ConnectionFacts => ({
  connected: false,
  everConnected: true,
  firstConnectSlow: false,
  online: true,
  queued: 0,
  ...over,
});

describe("connectionBanner", () => {
  it("stays away while connected, and during the first moment of a fresh page load", () => {
    expect(connectionBanner(facts({ connected: true, queued: 2 }))).toBeNull();
    expect(connectionBanner(facts({ everConnected: false }))).toBeNull();
    expect(connectionBanner(facts({ everConnected: false, online: false }))).toBeNull();
  });

  it("says connecting when the first connect takes long", () => {
    expect(connectionBanner(facts({ everConnected: false, firstConnectSlow: true }))).toEqual({
      state: "connecting",
      text: "Connecting…",
    });
  });

  it("says reconnecting once a connection was lost, and offline when the browser has no network", () => {
    expect(connectionBanner(facts({}))?.text).toBe("Reconnecting…");
    expect(connectionBanner(facts({ online: false }))).toEqual({
      state: "offline",
      text: "You're offline — messages will be sent when the connection is back.",
    });
  });

  it("counts the messages waiting to be sent", () => {
    expect(connectionBanner(facts({ queued: 1 }))?.text).toBe("Reconnecting… 1 message waiting to be sent.");
    expect(connectionBanner(facts({ online: false, queued: 3 }))?.text).toBe(
      "You're offline — messages will be sent when the connection is back. 3 messages waiting to be sent.",
    );
  });
});
