import { describe, expect, it } from "vitest";
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
