import { describe, expect, it } from "vitest";
import type { BlockList } from "@/server/contracts";
import { ME, setup } from "./fake-transport";

describe("restoring the session", () => {
  it("learns whether the server runs the lab, signed in or not", async () => {
    const t = setup();
    t.session.lab = false;
    t.store.setState({ user: null, sessionStatus: "loading", lab: true });
    await t.store.getState().restoreSession();
    expect(t.store.getState()).toMatchObject({ sessionStatus: "signedIn", user: ME, lab: false });

    t.session.signedIn = false;
    t.session.lab = true;
    t.store.setState({ user: null, sessionStatus: "loading", lab: false });
    await t.store.getState().restoreSession();
    expect(t.store.getState()).toMatchObject({ sessionStatus: "signedOut", user: null, lab: true });
  });

  it("stays signed in when the server cannot be reached, and signs out when it says there is no session", async () => {
    const t = setup();
    const { current } = t.session;
    t.session.current = async () => ({ ok: false, error: { code: "unavailable", message: "down" } });
    expect(await t.store.getState().verifySession()).toBe(true);
    expect(t.store.getState().sessionStatus).toBe("signedIn");
    t.session.current = current;
    t.session.signedIn = false;
    expect(await t.store.getState().verifySession()).toBe(false);
    expect(t.store.getState().sessionStatus).toBe("signedOut");
  });
});

describe("a session ended elsewhere", () => {
  it("is marked when a signed-in tab finds its session gone, and cleared by the next sign-in", async () => {
    const t = setup();
    expect(t.store.getState().sessionEnded).toBe(false);
    t.session.signedIn = false; // "Sign out everywhere" on another device
    expect(await t.store.getState().verifySession()).toBe(false);
    expect(t.store.getState()).toMatchObject({ sessionStatus: "signedOut", sessionEnded: true });
    // A second refusal of the same socket changes nothing.
    expect(await t.store.getState().verifySession()).toBe(false);
    expect(t.store.getState().sessionEnded).toBe(true);

    expect(await t.store.getState().signIn({ name: ME.name, password: "right password" })).toBeNull();
    expect(t.store.getState()).toMatchObject({ sessionStatus: "signedIn", sessionEnded: false });
  });

  it("is not marked by the tab's own sign-out, even when its socket drops before the sign-out is answered", async () => {
    for (const everywhere of [false, true]) {
      const { t, answer, done } = signingOut(everywhere);
      t.session.signedIn = false;
      expect(await t.store.getState().verifySession()).toBe(false);
      expect(t.store.getState().sessionEnded).toBe(false);
      answer();
      await done;
      expect(t.store.getState()).toMatchObject({ sessionStatus: "signedOut", sessionEnded: false });
    }
  });

  it("says why when the server said so before it dropped the socket, and in general when it did not", async () => {
    for (const reason of ["signed_out", "signed_out_everywhere", "expired"] as const) {
      const t = setup();
      t.store.getState().handleSessionEnded(reason);
      t.session.signedIn = false;
      expect(await t.store.getState().verifySession()).toBe(false);
      expect(t.store.getState()).toMatchObject({
        sessionStatus: "signedOut",
        sessionEnded: true,
        sessionEndReason: reason,
      });
      // Signed in again, the reason has done its work.
      expect(await t.store.getState().signIn({ name: ME.name, password: "right password" })).toBeNull();
      expect(t.store.getState()).toMatchObject({ sessionEnded: false, sessionEndReason: null });
    }
    // A reason this client does not know (a newer server's), or none: the general sentence.
    for (const reason of ["password_changed", undefined, 7]) {
      const t = setup();
      t.store.getState().handleSessionEnded(reason);
      t.session.signedIn = false;
      expect(await t.store.getState().verifySession()).toBe(false);
      expect(t.store.getState()).toMatchObject({ sessionEnded: true, sessionEndReason: null });
    }
  });

  it("forgets what the server said once it finds a session again (the cookie holds a newer one)", async () => {
    const t = setup();
    t.store.getState().handleSessionEnded("signed_out");
    // Signed in again in another tab of this browser before this one asked: it stays signed in.
    expect(await t.store.getState().verifySession()).toBe(true);
    // Ended later with nothing said (this tab was offline then): not the old reason.
    t.session.signedIn = false;
    expect(await t.store.getState().verifySession()).toBe(false);
    expect(t.store.getState()).toMatchObject({ sessionEnded: true, sessionEndReason: null });
  });

  it("signs the tab out when the browser's session is now someone else's (signed in in another tab meanwhile)", async () => {
    const t = setup();
    const { current } = t.session;
    // This tab was offline when its session ended; another tab of the browser then signed another person in.
    t.session.current = async () => ({ ok: true, user: { id: ME.id + 1, name: "someone_else" }, lab: false });
    expect(await t.store.getState().verifySession()).toBe(false);
    expect(t.store.getState()).toMatchObject({ sessionStatus: "signedOut", user: null, sessionEnded: true });
    expect(t.store.getState().totalUnread).toBe(0);
    t.session.current = current;
  });

  it("gives no reason after the tab's own sign-out, whose socket hears the end of its session too", async () => {
    for (const everywhere of [false, true]) {
      const { t, answer, done } = signingOut(everywhere);
      t.store.getState().handleSessionEnded(everywhere ? "signed_out_everywhere" : "signed_out");
      expect(await t.store.getState().verifySession()).toBe(false);
      answer();
      await done;
      // Heard after the sign-out was answered: nothing to explain either.
      t.store.getState().handleSessionEnded("signed_out");
      expect(t.store.getState()).toMatchObject({
        sessionStatus: "signedOut",
        sessionEnded: false,
        sessionEndReason: null,
      });
    }
  });

  it("is not marked at a page load without a session", async () => {
    const t = setup();
    t.session.signedIn = false;
    t.store.setState({ user: null, sessionStatus: "loading" });
    await t.store.getState().restoreSession();
    expect(t.store.getState()).toMatchObject({ sessionStatus: "signedOut", sessionEnded: false });
  });
});

/**
 * A new store's tab signing out (`everywhere` or not), its answer held back until `answer()`: what happens while the
 * tab's own sign-out is on its way. `done` is the sign-out's promise.
 */
function signingOut(everywhere: boolean) {
  const t = setup();
  const { signOut, signOutEverywhere } = t.session;
  let answer: () => void = () => undefined;
  const answered = new Promise<void>((resolve) => (answer = resolve));
  const slow = (end: typeof signOut) => async () => {
    const res = await end();
    await answered;
    return res;
  };
  t.session.signOut = slow(signOut);
  t.session.signOutEverywhere = slow(signOutEverywhere);
  const done = t.store.getState().signOut(everywhere);
  return { t, answer: () => answer(), done };
}

describe("the people a user blocked", () => {
  it("are forgotten at sign-out, so the next person to sign in on the page never sees them", async () => {
    const t = setup();
    t.store.getState().setBlocked({ blocked: [{ id: 7, name: "mal" }], version: 3 });
    expect(t.store.getState().blocked).toEqual([{ id: 7, name: "mal" }]);
    await t.store.getState().signOut();
    expect(t.store.getState().blocked).toEqual([]);
  });

  it("keep the newest list whichever order two lists arrive in, and take any list after a reset", () => {
    const t = setup();
    const mal = { id: 7, name: "mal" };
    const bob = { id: 8, name: "bob" };
    // This tab's block of bob is answered (version 3) after another tab's unblock of bob was pushed (version 4).
    t.store.getState().setBlocked({ blocked: [mal], version: 4 });
    t.store.getState().setBlocked({ blocked: [mal, bob], version: 3 });
    expect(t.store.getState().blocked).toEqual([mal]);
    // The same version again (an answer and its push) and a newer one are taken.
    t.store.getState().setBlocked({ blocked: [mal], version: 4 });
    t.store.getState().setBlocked({ blocked: [], version: 5 });
    expect(t.store.getState().blocked).toEqual([]);
    // A new socket may be another user's: its first list is taken whatever its version.
    t.store.getState().resetBlocked();
    expect(t.store.getState().blocked).toEqual([]);
    t.store.getState().setBlocked({ blocked: [bob], version: 0 });
    expect(t.store.getState().blocked).toEqual([bob]);
  });

  it("drop a list asked for someone who is no longer signed in, and take one from a server without versions", async () => {
    const t = setup();
    await t.store.getState().restoreSession();
    const mal = { id: 7, name: "mal" };
    t.store.getState().setBlocked({ blocked: [mal], version: 2 }, ME.id);
    expect(t.store.getState().blocked).toEqual([mal]);
    // Another user's answer (asked before a sign-out, answered after the next sign-in) is not this user's list.
    t.store.getState().setBlocked({ blocked: [], version: 9 }, ME.id + 1);
    expect(t.store.getState().blocked).toEqual([mal]);
    // The release before versions (a rolling restart): its list is taken, and the version held stays.
    t.store.getState().setBlocked({ blocked: [] } as unknown as BlockList);
    expect(t.store.getState().blocked).toEqual([]);
    t.store.getState().setBlocked({ blocked: [mal], version: 1 });
    expect(t.store.getState().blocked).toEqual([]);
  });
});
