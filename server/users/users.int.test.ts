import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../testing/harness.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness(2, { limits: { lookup: { points: 8, durationS: 600 } } });
});
afterAll(() => h.close());

const lookup = (prefix: string | null, token?: string, instance = 0) =>
  h.http(`/api/users${prefix === null ? "" : `?prefix=${encodeURIComponent(prefix)}`}`, {
    ...(token ? { token } : {}),
    instance,
  });

async function converse(token: string, memberNames: string[], title?: string) {
  const res = await h.http("/api/conversations", {
    method: "POST",
    token,
    body: JSON.stringify(title === undefined ? { memberNames } : { memberNames, title }),
  });
  expect(res.status).toBe(200);
}

describe("GET /api/users?prefix=", () => {
  it("finds only people who share a conversation with the caller, never strangers, the caller or bots", async () => {
    const me = await h.signUp("ul_me");
    const friend = await h.signUp("ul_Friend");
    const groupmate = await h.signUp("ul_fan");
    const stranger = await h.signUp("ul_foe");
    await h.signUp("ul_far");
    await converse(me.token, [friend.user.name]);
    await converse(friend.token, [groupmate.user.name, me.user.name], "a group");
    await converse(stranger.token, [friend.user.name]);
    const bot = await h.db.user.create({ data: { name: "ul_fbot", isBot: true } });
    const conv = await h.db.conversation.findFirstOrThrow({ where: { title: "a group" } });
    await h.db.membership.create({ data: { userId: bot.id, conversationId: conv.id } });

    // Any letter case of the prefix; the names as they are spelled; alphabetical.
    expect(await lookup("UL_F", me.token)).toMatchObject({
      status: 200,
      body: { ok: true, names: ["ul_fan", "ul_Friend"] },
    });
    expect((await lookup("ul_m", me.token)).body.names).toEqual([]);
    // The stranger shares a conversation with the friend only, not with me.
    expect((await lookup("ul_fo", me.token)).body.names).toEqual([]);
    expect((await lookup("ul_", stranger.token, 1)).body.names).toEqual(["ul_Friend"]);
  });

  it("does not find who started a direct conversation with the caller until its first message", async () => {
    const me = await h.signUp("uh_me");
    const stranger = await h.signUp("uh_stranger");
    const res = await h.http("/api/conversations", {
      method: "POST",
      token: stranger.token,
      body: JSON.stringify({ memberNames: [me.user.name] }),
    });
    expect(res.status).toBe(200);
    // The starter finds whom they named; the other does not find them, as their list does not show them.
    expect((await lookup("uh_me", stranger.token)).body.names).toEqual([me.user.name]);
    expect((await lookup("uh_", me.token)).body.names).toEqual([]);
    const s = await h.connect(stranger.token);
    const sent = await s.emitWithAck("message:send", {
      conversationId: res.body.conversation.id,
      clientMsgId: crypto.randomUUID(),
      content: "hello",
    });
    expect(sent).toMatchObject({ ok: true });
    expect((await lookup("uh_", me.token, 1)).body.names).toEqual([stranger.user.name]);
  });

  it("reads '_' in a prefix as itself, not as any character", async () => {
    const me = await h.signUp("us_me");
    const plain = await h.signUp("usxa");
    const under = await h.signUp("us_a");
    await converse(me.token, [plain.user.name, under.user.name]);
    expect((await lookup("us_", me.token)).body.names).toEqual(["us_a"]);
    expect((await lookup("us", me.token)).body.names).toEqual(["us_a", "usxa"]);
  });

  it("answers at most 10 names", async () => {
    const me = await h.signUp("um_me");
    const names: string[] = [];
    for (let i = 0; i < 12; i++) names.push((await h.signUp(`um_p${String(i).padStart(2, "0")}`)).user.name);
    await converse(me.token, names, "big group");
    expect((await lookup("um_p", me.token)).body.names).toEqual(names.slice(0, 10));
  });

  it("needs a session, and a prefix by the rules of a name", async () => {
    expect(await lookup("ab")).toMatchObject({ status: 401, body: { ok: false, error: { code: "unauthorized" } } });
    const me = await h.signUp("uv_me");
    expect(await lookup(null, me.token)).toMatchObject({
      status: 400,
      body: { error: { code: "invalid", message: "The name to look for is missing." } },
    });
    for (const bad of ["", "a b", "é", "x".repeat(33), "%"])
      expect(await lookup(bad, me.token)).toMatchObject({
        status: 400,
        body: { ok: false, error: { code: "invalid", message: expect.stringMatching(/^Type the start of a name/) } },
      });
    expect(await h.http("/api/users?prefix=ab&more=1", { token: me.token })).toMatchObject({
      status: 400,
      body: { error: { code: "invalid" } },
    });
  });

  it("is limited per user across instances", async () => {
    const me = await h.signUp("ur_me");
    const other = await h.signUp("ur_other");
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await lookup("ur", me.token, i % 2)).status);
    expect(statuses).toEqual([...Array<number>(8).fill(200), 429, 429]);
    const refused = await lookup("ur", me.token);
    expect(refused.body.error).toMatchObject({ code: "rate_limited", retryAfterMs: expect.any(Number) });
    expect((await lookup("ur", other.token)).status).toBe(200);
  });
});

describe("GET /api/start", () => {
  it("answers 200 with user null when signed out, the user when signed in, and whether the lab runs", async () => {
    expect(await h.http("/api/start")).toMatchObject({ status: 200, body: { ok: true, user: null, lab: true } });
    expect(await h.http("/api/start", { headers: { cookie: "tally_session=not-a-token" } })).toMatchObject({
      status: 200,
      body: { user: null },
    });
    const me = await h.signUp("st_me");
    expect(await h.http("/api/start", { token: me.token, instance: 1 })).toMatchObject({
      status: 200,
      body: { user: { id: me.user.id, name: "st_me" }, lab: true },
    });
    await h.http("/api/session", { method: "DELETE", token: me.token });
    expect((await h.http("/api/start", { token: me.token })).body.user).toBeNull();
  });

  it("says lab: false on a server without the lab", async () => {
    const noLab = await startHarness(1, { lab: false });
    try {
      expect((await noLab.http("/api/start")).body).toMatchObject({ user: null, lab: false });
    } finally {
      await noLab.close();
    }
  });
});
