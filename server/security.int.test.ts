/**
 * The attacker's suite: each finding of the security review (docs/security.md) as a test that failed before the fix.
 * Real servers, real sockets, a real database and Redis; two instances wherever "every instance" matters.
 */
import { request as httpRequest } from "node:http";
import { io as connect, Manager, type Socket } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClientToServerEvents, ServerToClientEvents } from "./contracts/index.ts";
import { ANOTHER_ACCOUNT } from "./errors.ts";
import type { LimitName, LimitRules } from "./limits/limits.ts";
import { CONNECTS_PER_CONNECTION } from "./sessions/socket-gate.ts";
import { connectSocket, startHarness, TEST_PASSWORD, type ClientSocket, type Harness } from "./testing/harness.ts";

type Client = Socket<ServerToClientEvents, ClientToServerEvents>;

/** Resolves with the reason once `socket` is disconnected, or rejects after `ms`. */
function disconnected(socket: ClientSocket, ms = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("still connected")), ms);
    socket.once("disconnect", (reason) => {
      clearTimeout(timer);
      resolve(reason);
    });
  });
}

/**
 * What `socket` hears until it is disconnected, in order: each `session:ended` with its reason, then the
 * disconnect with its reason. Rejects after `ms`, saying what it heard.
 */
function howItEnds(socket: Socket, ms = 5000): Promise<string[]> {
  const heard: string[] = [];
  socket.on("session:ended", ({ reason }: { reason: string }) => heard.push(`session:ended ${reason}`));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still connected, having heard ${JSON.stringify(heard)}`)), ms);
    socket.once("disconnect", (reason) => {
      clearTimeout(timer);
      heard.push(`disconnect ${reason}`);
      resolve(heard);
    });
  });
}

/** A socket whose handshake carries `origin`, as a browser page on that origin would send. */
function socketFrom(url: string, origin: string, token: string, track: Client[]): Promise<Client> {
  const socket: Client = connect(url, {
    auth: { token },
    transports: ["websocket"],
    extraHeaders: { origin },
    forceNew: true,
    reconnection: false,
  });
  track.push(socket);
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("connect_error", reject);
  });
}

/** Creates a conversation as the user of `token` (direct with one member, group with more); resolves with its id. */
async function createConversation(h: Harness, token: string, memberNames: string[], title?: string): Promise<number> {
  const res = await h.http("/api/conversations", {
    method: "POST",
    token,
    body: JSON.stringify(title === undefined ? { memberNames } : { memberNames, title }),
  });
  expect(res.status).toBe(200);
  return res.body.conversation.id as number;
}

/** Signs `name` in once more: a session of its own; resolves with its token. */
async function signIn(h: Harness, name: string): Promise<string> {
  const res = await h.http("/api/session", { method: "POST", body: JSON.stringify({ name, password: TEST_PASSWORD }) });
  expect(res.status).toBe(200);
  return res.body.token as string;
}

/** Every limit counted over ten minutes, longer than the suite runs: no count resets under a test. */
function perTenMinutes(points: Record<LimitName, number>): LimitRules {
  return Object.fromEntries(
    Object.entries(points).map(([name, n]) => [name, { points: n, durationS: 600 }]),
  ) as LimitRules;
}

describe("accounts, sessions and the front door", () => {
  let h: Harness;
  const clients: Client[] = [];
  beforeAll(async () => {
    h = await startHarness(2);
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await h.close();
  });

  it("no longer signs anyone in by name alone", async () => {
    await h.signUp("sec_victim");
    const res = await h.http("/api/session", { method: "POST", body: JSON.stringify({ name: "sec_victim" }) });
    expect(res).toMatchObject({ status: 400, body: { ok: false, error: { code: "invalid" } } });
    expect(res.body.token).toBeUndefined();
  });

  it("signs up with a password stored only as an argon2id hash, and refuses a taken name in any case", async () => {
    const res = await fetch(`${h.instances[0]!.url}/api/users`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Sec_New", password: "a good password" }),
    });
    const body = (await res.json()) as { ok: boolean; user: { name: string }; token: string };
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ ok: true, user: { name: "Sec_New" }, token: expect.any(String) });
    expect(res.headers.get("set-cookie")).toMatch(
      /^tally_session=[\w-]{43}; Max-Age=2592000; Path=\/; HttpOnly; SameSite=Lax$/,
    );
    const row = await h.db.user.findUniqueOrThrow({ where: { name: "Sec_New" } });
    expect(row.passwordHash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(row.passwordHash).not.toContain("a good password");
    // The token itself is not stored either.
    expect(await h.db.session.count({ where: { id: body.token } })).toBe(0);

    for (const name of ["Sec_New", "sec_new", "SEC_NEW"]) {
      const again = await h.http("/api/users", {
        method: "POST",
        body: JSON.stringify({ name, password: "whatever123" }),
      });
      // The name is at fault, not the password: a form marks that field alone.
      expect(again).toMatchObject({ status: 409, body: { ok: false, error: { code: "conflict", field: "name" } } });
    }
    expect(await h.db.user.count({ where: { name: { equals: "sec_new", mode: "insensitive" } } })).toBe(1);
  });

  it("names the field at fault in a refused sign-up, and none when no one field is", async () => {
    const signUp = (body: object) => h.http("/api/users", { method: "POST", body: JSON.stringify(body) });
    const fieldOf = async (body: object) => ((await signUp(body)).body as { error: { field?: string } }).error.field;
    expect(await fieldOf({ name: "has space", password: TEST_PASSWORD })).toBe("name");
    expect(await fieldOf({ name: "bot-sec", password: TEST_PASSWORD })).toBe("name");
    expect(await fieldOf({ name: "sec_short_pw", password: "short" })).toBe("password");
    expect(await fieldOf({ password: TEST_PASSWORD })).toBe("name");
    expect(await signUp({ name: "sec_extra", password: TEST_PASSWORD, admin: true })).toMatchObject({
      status: 400,
      body: { error: { code: "invalid", message: "The request has a field Tally does not know: 'admin'." } },
    });
    expect(await fieldOf({ name: "sec_extra", password: TEST_PASSWORD, admin: true })).toBeUndefined();
    expect(await h.db.user.count({ where: { name: { in: ["sec_short_pw", "sec_extra", "bot-sec"] } } })).toBe(0);
  });

  it("refuses a name that looks like a taken one (I, 1 or l; 0 or O; rn or m; vv or w), also when both come at once", async () => {
    await h.signUp("sec_Alice_rn_vv_O");
    for (const name of ["sec_AIice_rn_vv_O", "sec_A1ice_rn_vv_O", "sec_Alice_m_vv_0", "sec_Alice_rn_w_O"]) {
      const res = await h.http("/api/users", {
        method: "POST",
        body: JSON.stringify({ name, password: TEST_PASSWORD }),
      });
      expect(res, name).toMatchObject({
        status: 409,
        body: {
          ok: false,
          error: { code: "conflict", message: `The name ${name} looks like a taken one.`, field: "name" },
        },
      });
    }
    // Letters that do not look alike stay apart.
    await h.signUp("sec_Aiice_rn_vv_o");
    // Two look-alikes signed up at once: one account, the other refused.
    const both = await Promise.all(
      ["sec_bilI", "sec_bi1l"].map((name) =>
        h.http("/api/users", { method: "POST", body: JSON.stringify({ name, password: TEST_PASSWORD }) }),
      ),
    );
    expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(await h.db.user.count({ where: { name: { in: ["sec_bilI", "sec_bi1l"] } } })).toBe(1);
  });

  it("answers an unknown name and a wrong password alike", async () => {
    await h.signUp("sec_known");
    const wrong = await h.http("/api/session", {
      method: "POST",
      body: JSON.stringify({ name: "sec_known", password: "not the password" }),
    });
    const unknown = await h.http("/api/session", {
      method: "POST",
      body: JSON.stringify({ name: "sec_unknown_name", password: "not the password" }),
    });
    expect(wrong).toEqual({
      status: 401,
      body: { ok: false, error: { code: "unauthorized", message: "Wrong name or password." } },
    });
    expect(unknown).toEqual(wrong);
    const right = await h.http("/api/session", {
      method: "POST",
      body: JSON.stringify({ name: "SEC_KNOWN", password: TEST_PASSWORD }),
    });
    expect(right).toMatchObject({ status: 200, body: { ok: true, user: { name: "sec_known" } } });
  });

  it("revokes the presented session on every instance, as bearer and as cookie; other sessions keep working", async () => {
    const { token } = await h.signUp("sec_revoke");
    const other = await signIn(h, "sec_revoke");
    for (const instance of [0, 1]) expect((await h.http("/api/session", { token, instance })).status).toBe(200);

    const out = await h.http("/api/session", { method: "DELETE", token });
    expect(out).toEqual({ status: 200, body: { ok: true } });
    for (const instance of [0, 1]) {
      expect((await h.http("/api/session", { token, instance })).body.error.code).toBe("unauthorized");
      const byCookie = await h.http("/api/conversations", { instance, headers: { cookie: `tally_session=${token}` } });
      expect(byCookie.status).toBe(401);
      expect((await h.http("/api/session", { token: other, instance })).status).toBe(200);
    }
    await expect(h.connect(token, 1)).rejects.toMatchObject({ message: "unauthorized" });
  });

  it("refuses an HTTP call from a tab that shows someone other than the cookie's user, and it changes nothing", async () => {
    // The browser's cookie is bob's (he signed in in another tab); this tab still shows ann.
    const ann = await h.signUp("sec_shown_ann");
    const bob = await h.signUp("sec_shown_bob");
    const asAnn = { "x-tally-user": String(ann.user.id) };
    const refused = { status: 401, body: { ok: false, error: { code: "unauthorized", message: ANOTHER_ACCOUNT } } };
    const block = await h.http("/api/blocks", {
      method: "POST",
      token: bob.token,
      headers: asAnn,
      body: JSON.stringify({ name: "sec_shown_ann" }),
    });
    expect(block).toEqual(refused);
    expect(await h.http("/api/sessions", { method: "DELETE", token: bob.token, headers: asAnn })).toEqual(refused);
    expect(await h.http("/api/session", { method: "DELETE", token: bob.token, headers: asAnn })).toEqual(refused);
    // Nothing happened: bob blocked nobody and is still signed in.
    expect((await h.http("/api/blocks", { token: bob.token })).body.blocked).toEqual([]);
    expect((await h.http("/api/session", { token: bob.token })).body.user).toEqual(bob.user);
    // The cookie's own user is served; a malformed name is invalid; /api/start tells whom the cookie names.
    const asBob = { "x-tally-user": String(bob.user.id) };
    expect((await h.http("/api/blocks", { token: bob.token, headers: asBob })).status).toBe(200);
    for (const bad of ["ann", "0", "-1", "1.5", "0x1f"]) {
      expect(await h.http("/api/blocks", { token: bob.token, headers: { "x-tally-user": bad } })).toMatchObject({
        status: 400,
        body: { ok: false, error: { code: "invalid", message: "X-Tally-User must be a user id." } },
      });
    }
    expect((await h.http("/api/start", { token: bob.token })).body.user).toEqual(bob.user);
  });

  it("disconnects every socket of a revoked session on every instance, and only those", async () => {
    const { token } = await h.signUp("sec_sockets");
    const other = await signIn(h, "sec_sockets");
    const revokedTabs = [await h.connect(token, 0), await h.connect(token, 1)];
    const otherTab = await h.connect(other, 1);
    const gone = revokedTabs.map((s) => disconnected(s));

    await h.http("/api/session", { method: "DELETE", token, instance: 0 });
    expect(await Promise.all(gone)).toEqual(["io server disconnect", "io server disconnect"]);
    expect(otherTab.connected).toBe(true);
    expect(await otherTab.emitWithAck("sync")).toMatchObject({ ok: true });

    // Signing out everywhere ends the rest.
    const lastGone = disconnected(otherTab);
    expect(await h.http("/api/sessions", { method: "DELETE", token: other, instance: 0 })).toEqual({
      status: 200,
      body: { ok: true, ended: 1 },
    });
    expect(await lastGone).toBe("io server disconnect");
    expect((await h.http("/api/session", { token: other })).status).toBe(401);
  });

  it("tells every socket of an ended session why before it drops, on every instance and in both namespaces", async () => {
    const { token } = await h.signUp("sec_ended_why");
    const other = await signIn(h, "sec_ended_why");
    const lab = (instance: number, as: string) =>
      connectSocket<Socket>(`${h.instances[instance]!.url}/lab`, as, clients);
    // Two tabs of one browser (one session) on both instances, and its lab page; another device with the rest.
    const browser = [await h.connect(token, 0), await h.connect(token, 1), await lab(1, token)];
    const device = [await h.connect(other, 1), await lab(0, other)];
    const browserHeard = browser.map((s) => howItEnds(s));
    const deviceHeard = device.map((s) => howItEnds(s));

    // "Sign out" in one tab of the browser (its other tabs share the cookie, so the session).
    expect((await h.http("/api/session", { method: "DELETE", token, instance: 0 })).status).toBe(200);
    const signedOut = ["session:ended signed_out", "disconnect io server disconnect"];
    expect(await Promise.all(browserHeard)).toEqual([signedOut, signedOut, signedOut]);
    expect(device.map((s) => s.connected)).toEqual([true, true]);

    // "Sign out everywhere" from another device ends the device's session too; what the device heard shows it heard
    // nothing of the browser's sign-out (a push to it would have come first on the same socket).
    expect((await h.http("/api/sessions", { method: "DELETE", token: other, instance: 0 })).status).toBe(200);
    const everywhere = ["session:ended signed_out_everywhere", "disconnect io server disconnect"];
    expect(await Promise.all(deviceHeard)).toEqual([everywhere, everywhere]);
  });

  it("has no socket of a revoked session left on any instance once the sign-out has answered", async () => {
    const { token, user } = await h.signUp("sec_signout_sync");
    const other = await signIn(h, "sec_signout_sync");
    await h.connect(token, 1);
    await h.connect(other, 1);
    const remote = h.instances[1]!.app.io.of("/");
    const mine = () => [...remote.sockets.values()].filter((s) => s.data.user.id === user.id).length;
    expect(mine()).toBe(2);
    expect((await h.http("/api/session", { method: "DELETE", token, instance: 0 })).status).toBe(200);
    // Not eventually: the answer waited for instance 1 to have disconnected it, so no send of it can follow.
    expect(mine()).toBe(1);
  });

  it("drops a socket whose session was revoked while its handshake was being looked up", async () => {
    const { token, user } = await h.signUp("sec_signout_race");
    // Last used long ago, so the handshake's look-up also touches the session's row, and waits on its lock.
    await h.db.session.updateMany({ where: { userId: user.id }, data: { lastUsedAt: new Date(0) } });
    const io0 = h.instances[0]!.app.io.of("/");
    const mine = () => [...io0.sockets.values()].filter((s) => s.data.user.id === user.id).length;
    let connecting: Promise<unknown> = Promise.resolve();
    await h.db.$transaction(
      async (tx) => {
        // The sign-out, not yet committed: the handshake reads the session as valid, then waits on the row.
        await tx.session.deleteMany({ where: { userId: user.id } });
        connecting = h.connect(token, 0).catch((err: unknown) => err);
        await expect
          .poll(
            async () =>
              (await h.db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted`)[0]!.n,
            {
              timeout: 20_000,
            },
          )
          .toBeGreaterThan(0);
      },
      { timeout: 30_000 },
    );
    // Committed: the session is gone, and its sign-out's broadcast (none here) would have found the socket in no
    // room yet. The socket is admitted on what its look-up read, then dropped once it has joined its rooms.
    await connecting;
    await expect.poll(() => mine(), { timeout: 10_000 }).toBe(0);
    expect(await h.db.session.count({ where: { userId: user.id } })).toBe(0);
  });

  it("answers a sign-out even when the other instances never confirm, and their sockets still go", async () => {
    const { token } = await h.signUp("sec_signout_deadline");
    const remoteTab = await h.connect(token, 1);
    const gone = disconnected(remoteTab, 15_000);
    // The confirmation never comes (as when the adapter's Redis stops answering): the answer must not wait for it.
    const adapter = h.instances[0]!.app.io.of("/").adapter;
    const fetchSockets = adapter.fetchSockets.bind(adapter);
    adapter.fetchSockets = () => new Promise(() => undefined);
    try {
      expect((await h.http("/api/session", { method: "DELETE", token, instance: 0 })).status).toBe(200);
    } finally {
      adapter.fetchSockets = fetchSockets;
    }
    expect(await gone).toBe("io server disconnect");
    expect((await h.http("/api/session", { token })).status).toBe(401);
  }, 30_000);

  it("disconnects the signing-out instance's own sockets even when the adapter's broadcast is lost", async () => {
    const { token } = await h.signUp("sec_signout_local");
    const localTab = await h.connect(token, 0);
    const gone = disconnected(localTab, 15_000);
    // The classic adapter disconnects even its own instance's sockets only once its publication comes back through
    // Redis; here every broadcast and server-side event to the instances is lost and no instance ever answers.
    const adapter = h.instances[0]!.app.io.of("/").adapter;
    const { disconnectSockets, fetchSockets, serverSideEmit } = adapter;
    adapter.disconnectSockets = (opts, close) => {
      if (opts.flags?.local) disconnectSockets.call(adapter, opts, close);
    };
    adapter.fetchSockets = () => new Promise(() => undefined);
    adapter.serverSideEmit = () => undefined;
    try {
      expect((await h.http("/api/session", { method: "DELETE", token, instance: 0 })).status).toBe(200);
      expect(await gone).toBe("io server disconnect");
    } finally {
      adapter.disconnectSockets = disconnectSockets;
      adapter.fetchSockets = fetchSockets;
      adapter.serverSideEmit = serverSideEmit;
    }
  }, 30_000);

  it("disconnects a socket when its session expires, on either namespace, saying so first", async () => {
    const { token, user } = await h.signUp("sec_expiry");
    await h.db.session.updateMany({ where: { userId: user.id }, data: { expiresAt: new Date(Date.now() + 1500) } });
    const chat = await h.connect(token, 1);
    const lab = await connectSocket<Socket>(`${h.instances[0]!.url}/lab`, token, clients);
    const expired = ["session:ended expired", "disconnect io server disconnect"];
    expect(await Promise.all([howItEnds(chat, 15_000), howItEnds(lab, 15_000)])).toEqual([expired, expired]);
    expect((await h.http("/api/session", { token })).status).toBe(401);
  });

  it("closes a connection that sends binary data or a frame over 64 kB, storing nothing; other sockets go on", async () => {
    const alice = await h.signUp("sec_binary_a");
    const bob = await h.signUp("sec_binary_b");
    const id = await createConversation(h, alice.token, [bob.user.name]);
    const bystander = await h.connect(alice.token, 0);
    const payloads: [string, unknown][] = [
      ["sync", Buffer.alloc(900_000)],
      ["conversation:mute", { conversationId: id, muted: new Uint8Array(10) }],
      ["message:send", { conversationId: id, clientMsgId: "bin-1", content: "x", extra: Buffer.from("y") }],
      ["message:send", { conversationId: id, clientMsgId: "big-1", content: `${" ".repeat(70_000)}hi` }],
    ];
    for (const [event, payload] of payloads) {
      const socket = await h.connect(alice.token, 0);
      const gone = disconnected(socket);
      (socket as unknown as Socket).emit(event, payload, () => undefined);
      expect(await gone, event).toBe("transport close");
    }
    expect(await h.db.message.count({ where: { conversationId: id } })).toBe(0);
    expect(bystander.connected).toBe(true);
    const sent = await bystander.emitWithAck("message:send", {
      conversationId: id,
      clientMsgId: "ok-1",
      content: "hi",
    });
    expect(sent).toMatchObject({ ok: true });
  });

  it("answers sync with no input or null as the whole list, a second payload with invalid, and a command it does not have with not_found", async () => {
    const alice = await h.signUp("sec_commands_a");
    const bob = await h.signUp("sec_commands_b");
    await createConversation(h, alice.token, [bob.user.name]);
    const socket = await h.connect(alice.token, 0);
    const raw = socket as unknown as Socket;
    for (const answer of [await raw.emitWithAck("sync"), await raw.emitWithAck("sync", null)]) {
      expect(answer).toMatchObject({ ok: true, snapshot: { conversations: [{ kind: "direct" }] } });
    }
    expect(await raw.timeout(5000).emitWithAck("conversation:delete", { conversationId: 1 })).toEqual({
      ok: false,
      error: { code: "not_found", message: "There is no such command." },
    });
    expect(await raw.timeout(5000).emitWithAck("x".repeat(50_000))).toMatchObject({ error: { code: "not_found" } });
    // Socket.IO listens to "error" itself; it is still no command of Tally's.
    expect(await raw.timeout(5000).emitWithAck("error", {})).toMatchObject({ error: { code: "not_found" } });
    // One payload and the acknowledgement: a second payload is not ignored.
    expect(await raw.emitWithAck("sync", { limit: 1 }, { junk: true })).toMatchObject({
      ok: false,
      error: { code: "invalid", message: "A command takes one payload and an acknowledgement." },
    });
  });

  it("refuses a socket handshake from a foreign Origin, and takes one from its own", async () => {
    const { token } = await h.signUp("sec_origin");
    const url = h.instances[0]!.url;
    await expect(socketFrom(url, "http://127.0.0.1:1", token, clients)).rejects.toThrow();
    await expect(socketFrom(url, "http://evil.example", token, clients)).rejects.toThrow();
    await expect(socketFrom(url, "null", token, clients)).rejects.toThrow();
    const own = await socketFrom(url, url, token, clients);
    expect(await own.emitWithAck("sync")).toMatchObject({ ok: true });
  });

  it("refuses a cross-origin form POST (403) and any non-JSON body (415), changing nothing", async () => {
    const alice = await h.signUp("sec_csrf_a");
    const bob = await h.signUp("sec_csrf_b");
    const carol = await h.signUp("sec_csrf_c");
    const id = await createConversation(h, alice.token, [bob.user.name, carol.user.name], "csrf");
    const cookie = `tally_session=${alice.token}`;
    const formPost = (path: string, origin: string, body = "x=1") =>
      h.http(path, { method: "POST", headers: { cookie, origin, "content-type": "text/plain" }, body });

    const leave = await formPost(`/api/conversations/${id}/leave`, "http://127.0.0.1:1");
    expect(leave).toMatchObject({ status: 403, body: { error: { code: "forbidden" } } });
    const create = await formPost(
      "/api/conversations",
      "http://evil.example",
      JSON.stringify({ memberNames: [bob.user.name] }),
    );
    expect(create.status).toBe(403);
    const dave = await h.signUp("sec_csrf_d");
    const add = await formPost(
      `/api/conversations/${id}/members`,
      "http://evil.example",
      JSON.stringify({ memberNames: [dave.user.name] }),
    );
    expect(add.status).toBe(403);
    const kick = await h.http(`/api/conversations/${id}/members/${carol.user.id}`, {
      method: "DELETE",
      headers: { cookie, origin: "http://evil.example" },
    });
    expect(kick).toMatchObject({ status: 403, body: { error: { code: "forbidden" } } });
    // Even with a JSON body, another origin may not change state.
    const jsonFromElsewhere = await h.http(`/api/conversations/${id}/leave`, {
      method: "POST",
      headers: { cookie, origin: "http://evil.example", "content-type": "application/json" },
      body: "{}",
    });
    expect(jsonFromElsewhere.status).toBe(403);
    // Same origin, but not JSON.
    const own = h.instances[0]!.url;
    const plain = await formPost(`/api/conversations/${id}/leave`, own);
    expect(plain).toMatchObject({ status: 415, body: { error: { code: "unsupported_media_type" } } });
    const urlencoded = await h.http("/api/users", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "name=x&password=yyyyyyyy",
    });
    expect(urlencoded.status).toBe(415);

    expect(await h.db.membership.count({ where: { conversationId: id } })).toBe(3);
    expect(await h.db.membership.count({ where: { userId: alice.user.id } })).toBe(1);
    expect(await h.db.membership.count({ where: { userId: dave.user.id } })).toBe(0);
    // And the same request from its own origin, as JSON, works.
    const ok = await h.http(`/api/conversations/${id}/leave`, { method: "POST", headers: { cookie, origin: own } });
    expect(ok.status).toBe(200);
  });

  it("sends the security headers on API answers and on Socket.IO's own", async () => {
    const res = await fetch(`${h.instances[0]!.url}/api/health`);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toMatch(/frame-ancestors 'none'/);
    expect(csp).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]{24}' 'strict-dynamic'/);
    expect(csp.split(";").find((d) => d.trim().startsWith("script-src"))).not.toMatch(/unsafe-inline/);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("referrer-policy")).toBe("strict-origin-when-cross-origin");
    expect(res.headers.get("strict-transport-security")).toBeNull();
    const next = await fetch(`${h.instances[0]!.url}/api/health`);
    expect(next.headers.get("content-security-policy")).not.toBe(csp);

    // Socket.IO's own answers, which engine.io writes without the request handler: a long-polling handshake.
    const polling = await fetch(`${h.instances[0]!.url}/socket.io/?EIO=4&transport=polling`);
    expect(polling.status).toBe(200);
    expect(await polling.text()).toMatch(/^0\{"sid":/);
    expect(polling.headers.get("content-security-policy")).toBe("default-src 'none';frame-ancestors 'none'");
    expect(polling.headers.get("x-content-type-options")).toBe("nosniff");
    expect(polling.headers.get("x-frame-options")).toBe("DENY");
    expect(polling.headers.get("referrer-policy")).toBe("strict-origin-when-cross-origin");
  });

  it("answers HEAD as GET without a body, OPTIONS and other methods with Allow, and a target without a path with 400", async () => {
    const { token } = await h.signUp("sec_methods");
    const base = h.instances[0]!.url;
    const session = { authorization: `Bearer ${token}` };

    const head = await fetch(`${base}/api/session`, { method: "HEAD", headers: session });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await head.text()).toBe("");
    expect((await fetch(`${base}/api/session`, { method: "HEAD" })).status).toBe(401);
    expect((await fetch(`${base}/api/health`, { method: "HEAD" })).status).toBe(200);

    const options = await fetch(`${base}/api/session`, { method: "OPTIONS" });
    expect(options.status).toBe(204);
    expect(options.headers.get("allow")).toBe("POST, GET, HEAD, DELETE, OPTIONS");
    expect(await options.text()).toBe("");

    // A method the path does not take changes nothing, whatever it carries.
    const conversations = await h.db.conversation.count();
    const put = await h.http("/api/conversations", { method: "PUT", token, body: JSON.stringify({ memberNames: [] }) });
    expect(put).toMatchObject({ status: 405, body: { ok: false, error: { code: "method_not_allowed" } } });
    expect(await h.db.conversation.count()).toBe(conversations);
    const post = await fetch(`${base}/api/health`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD, OPTIONS");
    expect((await h.http("/api/nothing-here", { method: "OPTIONS" })).status).toBe(404);

    // fetch() cannot send these targets, so they go as raw request lines.
    const raw = (target: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest({ host: "127.0.0.1", port: Number(new URL(base).port), path: target }, (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (body += chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on("error", reject);
        req.end();
      });
    for (const target of ["http://[/api/session", "ftp://elsewhere.example/api/health", "*"]) {
      const answer = await raw(target);
      expect(answer.status, target).toBe(400);
      expect(JSON.parse(answer.body), target).toMatchObject({ ok: false, error: { code: "invalid" } });
    }
    // An absolute target (as a forward proxy sends it) is read for its path, whatever host it names.
    expect(await raw("http://elsewhere.example/api/health")).toEqual({ status: 200, body: '{"ok":true}' });
    expect(await raw("http://elsewhere.example/api/health?x=1")).toMatchObject({ status: 400 });
    expect(await raw("http://elsewhere.example/some/page")).toEqual({ status: 404, body: "Not found" });
    // A path that starts with "//" is a path, not a host ("//[" made the API answer 500 with no body): not the API's.
    for (const target of ["//[", "//api/health", "//[::1]/api/health"]) {
      expect(await raw(target), target).toEqual({ status: 404, body: "Not found" });
    }
  });

  it("refuses a query parameter given twice, or one the route does not know, `__proto__` included", async () => {
    const alice = await h.signUp("sec_query_a");
    const bob = await h.signUp("sec_query_b");
    const conversationId = await createConversation(h, alice.token, [bob.user.name]);
    const get = (path: string) => h.http(path, { token: alice.token });
    expect(await get("/api/users?prefix=sec_query")).toMatchObject({ status: 200 });
    for (const path of [
      "/api/users?prefix=sec&prefix=sec_query",
      "/api/users?prefix=sec_query&__proto__=1",
      "/api/users?prefix=sec_query&__proto__=1&__proto__=2",
      "/api/conversations?limit=5&limit=6",
      "/api/conversations?__proto__=x",
      `/api/conversations/${conversationId}/messages?__proto__=1`,
      `/api/conversations/${conversationId}/messages?constructor=1`,
    ]) {
      expect(await get(path), path).toMatchObject({ status: 400, body: { ok: false, error: { code: "invalid" } } });
    }
  });

  it("refuses a query or a body on a route that takes none, and the refused request changes nothing", async () => {
    const alice = await h.signUp("sec_none_a");
    const bob = await h.signUp("sec_none_b");
    const carol = await h.signUp("sec_none_c");
    const dave = await h.signUp("sec_none_d");
    const group = await createConversation(h, alice.token, [bob.user.name, carol.user.name], "none");
    const direct = await createConversation(h, alice.token, [bob.user.name]);
    const refused = { status: 400, body: { ok: false, error: { code: "invalid" } } };
    const json = (body: string) => ({ body, headers: { "content-type": "application/json" } });
    for (const path of ["/api/demo?x=1", "/api/demo?x=1&x=2", "/api/start?x", "/api/session?x=1", "/api/health?x=1"]) {
      expect(await h.http(path, { token: alice.token }), path).toMatchObject(refused);
    }
    // A route that takes a body takes no query.
    const signInBody = JSON.stringify({ name: "sec_none_a", password: TEST_PASSWORD });
    expect(await h.http("/api/session?x=1", { method: "POST", body: signInBody })).toMatchObject(refused);
    // Each refused: bob is still in the group and the direct conversation still there, the session still valid.
    for (const [method, path, init] of [
      ["POST", `/api/conversations/${group}/leave?x=1`, {}],
      ["POST", `/api/conversations/${group}/leave`, json('{"x":1}')],
      ["POST", `/api/conversations/${group}/leave`, json("[]")],
      ["POST", `/api/conversations/${group}/members?x=1`, json(`{"memberNames":["${dave.user.name}"]}`)],
      ["DELETE", `/api/conversations/${group}/members/${carol.user.id}?x=1`, {}],
      ["DELETE", `/api/conversations/${group}/members/${carol.user.id}`, json('{"x":1}')],
      ["DELETE", `/api/conversations/${direct}`, json('"x"')],
      ["DELETE", `/api/conversations/${direct}?x=1`, {}],
      ["DELETE", "/api/session", json('{"everywhere":true}')],
      ["DELETE", "/api/sessions?x=1", {}],
    ] as const) {
      expect(await h.http(path, { method, token: bob.token, ...init }), `${method} ${path}`).toMatchObject(refused);
    }
    const listOf = async (token: string) => {
      const list = await h.http("/api/conversations", { token });
      expect(list.status).toBe(200);
      return (list.body as { conversations: { id: number }[] }).conversations.map((c) => c.id);
    };
    expect(await listOf(bob.token)).toContain(group);
    expect(await listOf(carol.token)).toContain(group);
    expect(await listOf(dave.token)).toEqual([]);
    // The direct conversation has no message yet, so only its creator's list shows it.
    expect(await listOf(alice.token)).toEqual(expect.arrayContaining([group, direct]));
    // Nothing, `null` and `{}` count as none.
    expect(await h.http("/api/demo?", {})).toMatchObject({ status: 200 });
    expect(
      await h.http(`/api/conversations/${group}/leave`, { method: "POST", token: bob.token, ...json("{}") }),
    ).toMatchObject({ status: 200 });
    expect(
      // Its creator's: bob's list does not show it (no message yet), and his DELETE would be `forbidden`.
      await h.http(`/api/conversations/${direct}`, { method: "DELETE", token: alice.token, ...json("null") }),
    ).toMatchObject({ status: 200 });
    expect(await h.http("/api/session", { method: "DELETE", token: carol.token })).toMatchObject({ status: 200 });
  });

  /** A socket to the second instance that sends `cookie` (and `token` in `auth` when given). */
  const socketWithCookie = (cookie: string, token?: string) =>
    new Promise<Client>((resolve, reject) => {
      const s: Client = connect(h.instances[1]!.url, {
        ...(token ? { auth: { token } } : {}),
        transports: ["websocket"],
        extraHeaders: { cookie },
        forceNew: true,
        reconnection: false,
      });
      clients.push(s);
      s.once("connect", () => resolve(s));
      s.once("connect_error", reject);
    });

  it("ignores a malformed session cookie: a valid bearer still works, without one it is 401, never 503", async () => {
    const { token } = await h.signUp("sec_cookie");
    for (const bad of ["%E0%A4%A", "%", '"unterminated', "x".repeat(5000)]) {
      const cookie = `tally_session=${bad}`;
      expect((await h.http("/api/session", { token, headers: { cookie } })).status).toBe(200);
      expect(await h.http("/api/session", { headers: { cookie } })).toMatchObject({
        status: 401,
        body: { error: { code: "unauthorized" } },
      });
    }
    expect((await socketWithCookie("tally_session=%E0%A4%A", token)).connected).toBe(true);
  });

  it("takes the real session cookie after a planted one (a path of /api goes first), over HTTP and sockets", async () => {
    const { token } = await h.signUp("sec_cookie_planted");
    for (const planted of ["%E0%A4%A", "bad!", "Q".repeat(43)]) {
      const cookie = `tally_session=${planted}; tally_session=${token}`;
      expect(await h.http("/api/session", { headers: { cookie } })).toMatchObject({
        status: 200,
        body: { user: { name: "sec_cookie_planted" } },
      });
      expect((await socketWithCookie(cookie)).connected).toBe(true);
    }
  });

  it("answers NUL and lone surrogates with `invalid` naming the field, and stores exactly what it acknowledges", async () => {
    const alice = await h.signUp("sec_text_a");
    const bob = await h.signUp("sec_text_b");
    const conversationId = await createConversation(h, alice.token, [bob.user.name]);
    const s = await h.connect(alice.token);
    const send = (content: string, clientMsgId: string) =>
      s.emitWithAck("message:send", { conversationId, clientMsgId, content });
    const nul = await send("a\u0000b", "nul");
    expect(nul).toMatchObject({
      ok: false,
      error: { code: "invalid", message: expect.stringMatching(/^The message cannot contain a NUL/) },
    });
    for (const [content, id] of [
      ["\ud800", "hi"],
      ["x\udfff", "lo"],
      ["\udc00\ud800", "swap"],
    ] as const) {
      expect(await send(content, id)).toMatchObject({
        ok: false,
        error: { code: "invalid", message: expect.stringMatching(/^The message contains a broken character/) },
      });
    }
    const title = await h.http("/api/conversations", {
      method: "POST",
      token: alice.token,
      body: JSON.stringify({ memberNames: [bob.user.name, "sec_text_a"], title: "bad\u0000title" }),
    });
    expect(title).toMatchObject({
      status: 400,
      body: { error: { code: "invalid", message: expect.stringMatching(/^The title cannot contain a NUL/) } },
    });
    expect(await h.db.message.count({ where: { conversationId } })).toBe(0);

    const tricky = "emoji 👍🏽, e\u0301, 中文, \u200b, \ud83d\ude00 and a tab\t";
    const sent = await send(tricky, "ok");
    if (!sent.ok) throw new Error(sent.error.message);
    expect(sent.message.content).toBe(tricky.trim());
    const stored = await h.db.message.findUniqueOrThrow({ where: { id: sent.message.id } });
    expect(stored.content).toBe(sent.message.content);
  });
});

describe("limits per user and per address, across sockets and instances", () => {
  /** Accounts from this harness's one address in 10 minutes: the tests below sign up some 20 people before the flood's. */
  const SIGN_UPS = 25;
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(2, {
      maxSocketsPerUser: 10,
      trustProxy: true,
      limits: perTenMinutes({
        send: 60,
        mention: 5,
        sync: 5,
        list: 3,
        history: 100,
        read: 5,
        state: 1000,
        create: 3,
        groupAdd: 4,
        remove: 1,
        removeMember: 1,
        deleteMessage: 2,
        block: 1000,
        lookup: 3,
        signUp: SIGN_UPS,
        signIn: 8,
        signInFailures: 3,
        handshakeFailures: 12,
        lab: 1000,
        labStatus: 1000,
        labRun: 1000,
      }),
    });
  });
  afterAll(async () => {
    await h.close();
  });

  it("holds one user to one send limit over 10 sockets on two instances, and caps their sockets", async () => {
    const alice = await h.signUp("lim_a");
    const bob = await h.signUp("lim_b");
    const conversationId = await createConversation(h, alice.token, [bob.user.name]);
    const sockets: ClientSocket[] = [];
    for (let i = 0; i < 10; i++) sockets.push(await h.connect(alice.token, i % 2));
    await expect(h.connect(alice.token, 1)).rejects.toMatchObject({
      message: "rate_limited",
      data: { code: "rate_limited", retryAfterMs: 5000 },
    });

    const acks = await Promise.all(
      sockets.flatMap((s, i) =>
        Array.from({ length: 60 }, (_, j) =>
          s.emitWithAck("message:send", { conversationId, clientMsgId: `m${i}-${j}`, content: `hello ${i}/${j}` }),
        ),
      ),
    );
    const accepted = acks.filter((a) => a.ok).length;
    const refused = acks.filter((a) => !a.ok);
    expect(accepted).toBe(60);
    expect(refused).toHaveLength(540);
    expect(refused[0]).toMatchObject({ ok: false, error: { code: "rate_limited", retryAfterMs: expect.any(Number) } });
    expect(await h.db.message.count({ where: { conversationId } })).toBe(60);

    // A socket closed frees its place under the cap.
    sockets[0]!.disconnect();
    await expect
      .poll(async () =>
        h.connect(alice.token, 1).then(
          () => true,
          () => false,
        ),
      )
      .toBe(true);
  });

  it("admits no more than the cap of a user's sockets opened all at once on one instance", async () => {
    const { token } = await h.signUp("lim_burst");
    const opened = await Promise.allSettled(Array.from({ length: 30 }, () => h.connect(token, 0)));
    expect(opened.filter((o) => o.status === "fulfilled")).toHaveLength(10);
    for (const o of opened) {
      if (o.status === "rejected") expect(o.reason).toMatchObject({ data: { code: "rate_limited" } });
    }
  });

  it("closes a connection that asks for a namespace over and over, before it looks up any more sessions", async () => {
    const { token } = await h.signUp("lim_connects");
    // A connection whose handshakes are refused stays open for more (Socket.IO closes one that asks again for a
    // namespace it holds): each was a session look-up, and a flood of them held memory and stalled everyone. The
    // lab namespace's socket keeps this connection open; "/" is asked for with a token that names no session.
    const manager = new Manager(h.instances[0]!.url, {
      transports: ["websocket"],
      forceNew: true,
      reconnection: false,
    });
    const lab = manager.socket("/lab", { auth: { token } });
    await new Promise<void>((resolve) => lab.once("connect", resolve));
    const engine = manager.engine;
    const answers: string[] = [];
    engine.on("message", (data) => answers.push(String(data)));
    const closed = new Promise<string>((resolve) => engine.once("close", (reason) => resolve(reason)));
    for (let i = 0; i < 200; i++) engine.write(`0${JSON.stringify({ token: "Z".repeat(43) })}`);
    expect(await closed).toBe("transport close");
    // The lab's handshake was on this connection too: only the rest of the allowance was answered.
    expect(answers.filter((a) => a.startsWith("44/,") || a.startsWith("44{")).length).toBeLessThan(
      CONNECTS_PER_CONNECTION,
    );
    // The user is not locked out: a new connection is admitted.
    expect((await h.connect(token, 0)).connected).toBe(true);
  });

  it("refuses an address's handshakes before any look-up once too many came without a valid session", async () => {
    const { token } = await h.signUp("lim_handshake");
    const opened: Client[] = [];
    /** A handshake from `address` (the harness trusts X-Forwarded-For) to `instance`: its refusal, or undefined. */
    const from = (address: string, instance: number, auth: string) =>
      new Promise<Error | undefined>((resolve) => {
        const s: Client = connect(h.instances[instance]!.url, {
          auth: { token: auth },
          transports: ["websocket"],
          extraHeaders: { "x-forwarded-for": address },
          forceNew: true,
          reconnection: false,
        });
        opened.push(s);
        s.once("connect", () => resolve(undefined));
        s.once("connect_error", (err) => resolve(err));
      });
    const madeUp = "Z".repeat(43);
    const attacker = "203.0.113.20";
    // Twelve made-up tokens are looked up and refused as such, and the thirteenth, which goes over, too.
    for (let i = 0; i < 13; i++)
      expect(await from(attacker, 0, madeUp), `try ${i}`).toMatchObject({ message: "unauthorized" });
    // From then on the address is refused before any look-up, a valid session as well, with a retry hint.
    expect(await from(attacker, 0, token)).toMatchObject({
      message: "rate_limited",
      data: { code: "rate_limited", retryAfterMs: expect.any(Number) },
    });
    // Others are not: the same session from another address is admitted.
    expect(await from("203.0.113.21", 0, token)).toBeUndefined();
    // The count is in Redis: the other instance refuses the address after one failed look-up of its own.
    expect(await from(attacker, 1, madeUp)).toMatchObject({ message: "unauthorized" });
    expect(await from(attacker, 1, token)).toMatchObject({ message: "rate_limited" });
    for (const s of opened) s.disconnect();
  });

  it("behind a trusted proxy that names the scheme, refuses a page of the other scheme on the same host", async () => {
    const url = h.instances[0]!.url;
    const signOut = (origin: string) =>
      h.http("/api/session", { method: "DELETE", headers: { origin, "x-forwarded-proto": "https" } });
    expect(await signOut(url)).toMatchObject({ status: 403, body: { error: { code: "forbidden" } } });
    expect(await signOut(url.replace("http:", "https:"))).toMatchObject({ status: 200 });
    const { token } = await h.signUp("lim_scheme");
    const socketFrom = (origin: string) =>
      new Promise<Client>((resolve, reject) => {
        const s: Client = connect(url, {
          auth: { token },
          transports: ["websocket"],
          extraHeaders: { origin, "x-forwarded-proto": "https" },
          forceNew: true,
          reconnection: false,
        });
        s.once("connect", () => resolve(s));
        s.once("connect_error", (err) => {
          s.disconnect();
          reject(err);
        });
      });
    await expect(socketFrom(url)).rejects.toThrow();
    (await socketFrom(url.replace("http:", "https:"))).disconnect();
  });

  it("limits the people a user's messages mention, @all counting every other member, a retry nothing; a refused send stores nothing", async () => {
    const u = await h.signUp("lim_ment");
    const others = [await h.signUp("lim_m1"), await h.signUp("lim_m2"), await h.signUp("lim_m3")];
    const conversationId = await createConversation(
      h,
      u.token,
      others.map((o) => o.user.name),
    );
    const s = await h.connect(u.token);
    let n = 0;
    const send = (content: string) =>
      s.emitWithAck("message:send", { conversationId, clientMsgId: `ment-${n++}`, content });
    expect((await send("@all standup in 5")).ok).toBe(true); // 3 of 5
    const retried = await s.emitWithAck("message:send", {
      conversationId,
      clientMsgId: "ment-0",
      content: "@all standup in 5",
    });
    expect(retried).toMatchObject({ ok: true, message: { seq: 1 } }); // the stored message again, not charged
    expect((await send(`@${others[0]!.user.name} you first`)).ok).toBe(true); // 4 of 5
    const refused = await send("@all again");
    expect(refused).toMatchObject({ ok: false, error: { code: "rate_limited", retryAfterMs: expect.any(Number) } });
    expect((await send("no one mentioned")).ok).toBe(true);
    expect((await send(`@${others[1]!.user.name} then you`)).ok).toBe(true); // 5 of 5: the refused 3 never counted
    expect((await send(`@${others[2]!.user.name}`)).ok).toBe(false);
    const stored = await h.db.message.findMany({ where: { conversationId }, orderBy: { seq: "asc" } });
    expect(stored.map((m) => [m.seq, m.content])).toEqual([
      [1, "@all standup in 5"],
      [2, `@${others[0]!.user.name} you first`],
      [3, "no one mentioned"],
      [4, `@${others[1]!.user.name} then you`],
    ]);
    expect(await h.db.mention.count({ where: { conversationId } })).toBe(5);
    const conversation = await h.db.conversation.findUniqueOrThrow({ where: { id: conversationId } });
    expect(conversation.lastSeq).toBe(4);
  });

  it("limits sync, reads, history pages, conversation creation and deletion per user, with a retry hint", async () => {
    const u = await h.signUp("lim_sync");
    const others = [await h.signUp("lim_o1"), await h.signUp("lim_o2"), await h.signUp("lim_o3")];
    const [s0, s1] = [await h.connect(u.token, 0), await h.connect(u.token, 1)];
    const syncs = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? s1 : s0).emitWithAck("sync")));
    expect(syncs.filter((r) => r.ok)).toHaveLength(5);
    const http = await h.http("/api/conversations", { token: u.token });
    expect(http.status).toBe(429);
    expect(Number(http.body.error.retryAfterMs)).toBeGreaterThan(0);

    const reads = await Promise.all(
      Array.from({ length: 7 }, () => s0.emitWithAck("conversation:read", { conversationId: 1, seq: 1 })),
    );
    expect(reads.filter((r) => !r.ok && r.error.code === "rate_limited")).toHaveLength(2);

    const create = (memberNames: string[]) =>
      h.http("/api/conversations", { method: "POST", token: u.token, body: JSON.stringify({ memberNames }) });
    // A group of three others uses 3 of the 4 group adds; the next group of two is over.
    expect((await create(others.map((o) => o.user.name))).status).toBe(200);
    expect(await create([others[0]!.user.name, others[1]!.user.name])).toMatchObject({
      status: 429,
      body: { error: { code: "rate_limited" } },
    });
    expect((await create([others[2]!.user.name])).status).toBe(200);
    const over = await create([others[1]!.user.name]);
    expect(over).toMatchObject({ status: 429, body: { error: { code: "rate_limited" } } });
    expect(await h.db.membership.count({ where: { userId: u.user.id } })).toBe(2);

    // Deletions too: each leaves every member a departure and a "gone" mark.
    const [first, second] = await h.db.membership.findMany({
      where: { userId: u.user.id },
      select: { conversationId: true },
    });
    const remove = (id: number) => h.http(`/api/conversations/${id}`, { method: "DELETE", token: u.token });
    expect((await remove(first!.conversationId)).status).toBe(200);
    const refused = await remove(second!.conversationId);
    expect(refused).toMatchObject({ status: 429, body: { error: { code: "rate_limited" } } });
    expect(Number(refused.body.error.retryAfterMs)).toBeGreaterThan(0);
    expect(await h.db.membership.count({ where: { userId: u.user.id } })).toBe(1);

    // Pages of history, each charged the rows it asks for: 60 and 40 of 100; a page of 50 between them is refused
    // and gives its points back.
    const page = (limit: number) =>
      h.http(`/api/conversations/${second!.conversationId}/messages?limit=${limit}`, { token: u.token });
    expect((await page(60)).status).toBe(200);
    expect(await page(50)).toMatchObject({ status: 429, body: { error: { code: "rate_limited" } } });
    expect((await page(40)).status).toBe(200);
    expect((await page(1)).status).toBe(429);
  });

  it("limits the people one user removes from their groups", async () => {
    const u = await h.signUp("lim_kick");
    const [a, b] = [await h.signUp("lim_kick_a"), await h.signUp("lim_kick_b")];
    const res = await h.http("/api/conversations", {
      method: "POST",
      token: u.token,
      body: JSON.stringify({ memberNames: [a.user.name, b.user.name] }),
    });
    const id = res.body.conversation.id as number;
    const kick = (userId: number) =>
      h.http(`/api/conversations/${id}/members/${userId}`, { method: "DELETE", token: u.token });
    expect((await kick(a.user.id)).status).toBe(200);
    const refused = await kick(b.user.id);
    expect(refused).toMatchObject({ status: 429, body: { error: { code: "rate_limited" } } });
    expect(Number(refused.body.error.retryAfterMs)).toBeGreaterThan(0);
    expect(await h.db.membership.count({ where: { conversationId: id } })).toBe(2);
  });

  it("limits the messages one user deletes; a refused deletion deletes nothing", async () => {
    const u = await h.signUp("lim_unsend");
    const other = await h.signUp("lim_unsend_b");
    const res = await h.http("/api/conversations", {
      method: "POST",
      token: u.token,
      body: JSON.stringify({ memberNames: [other.user.name] }),
    });
    const id = res.body.conversation.id as number;
    const s = await h.connect(u.token);
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const sent = await s.emitWithAck("message:send", {
        conversationId: id,
        clientMsgId: `unsend-${i}`,
        content: "x",
      });
      if (!sent.ok) throw new Error(sent.error.message);
      ids.push(sent.message.id);
    }
    for (const messageId of ids.slice(0, 2))
      expect(await s.emitWithAck("message:delete", { messageId })).toMatchObject({ ok: true });
    const refused = await s.emitWithAck("message:delete", { messageId: ids[2]! });
    expect(refused).toMatchObject({ ok: false, error: { code: "rate_limited" } });
    expect(await h.db.message.count({ where: { conversationId: id, deletedAt: null } })).toBe(1);
    s.disconnect();
  });

  it("charges a sync by its size: a user put into 200 groups by others gets fewer syncs", async () => {
    const big = await h.signUp("lim_big");
    const other = await h.db.user.create({ data: { name: "lim_grouper" } });
    const groups = await h.db.conversation.createManyAndReturn({
      data: Array.from({ length: 200 }, (_, i) => ({ kind: "group" as const, title: `g${i}`, createdById: other.id })),
      select: { id: true },
    });
    await h.db.membership.createMany({
      data: groups.flatMap((g) => [
        { userId: big.user.id, conversationId: g.id },
        { userId: other.id, conversationId: g.id },
      ]),
    });
    const s = await h.connect(big.token);
    // 1 point a sync plus 2 for its 200 conversations, against 5 points: the second is served, then over.
    const first = await s.emitWithAck("sync");
    expect(first.ok && first.snapshot.conversations.length).toBe(200);
    expect((await s.emitWithAck("sync")).ok).toBe(true);
    expect(await s.emitWithAck("sync")).toMatchObject({ ok: false, error: { code: "rate_limited" } });

    // A first page costs as much as the whole list: every conversation's id and count are read either way.
    const pager = await h.signUp("lim_pager");
    await h.db.membership.createMany({ data: groups.map((g) => ({ userId: pager.user.id, conversationId: g.id })) });
    const p = await h.connect(pager.token);
    const page = await p.emitWithAck("sync", { limit: 50 });
    if (!page.ok) throw new Error(page.error.message);
    expect(page.snapshot).toMatchObject({ more: true });
    expect(page.snapshot.conversations).toHaveLength(50);
    expect(page.snapshot.conversationIds).toHaveLength(200);
    expect((await p.emitWithAck("sync", { limit: 50 })).ok).toBe(true);
    expect(await p.emitWithAck("sync", { limit: 1 })).toMatchObject({ ok: false, error: { code: "rate_limited" } });
    // The HTTP first page is a sync too: the same limit, the same answer, with Retry-After.
    const overHttp = await fetch(`${h.instances[0]!.url}/api/conversations?limit=1`, {
      headers: { authorization: `Bearer ${pager.token}` },
    });
    expect([overHttp.status, ((await overHttp.json()) as { error: { code: string } }).error.code]).toEqual([
      429,
      "rate_limited",
    ]);
    expect(Number(overHttp.headers.get("retry-after"))).toBeGreaterThan(0);

    // Pages of the list have their own limit (3 here), one point a page of up to 50 rows and one more per 50 after.
    const last = page.snapshot.conversations.at(-1)!;
    const before = { at: last.lastMessage?.createdAt ?? last.createdAt, id: last.id };
    for (let i = 0; i < 2; i++) expect((await p.emitWithAck("conversation:list", { before, limit: 50 })).ok).toBe(true);
    // …over HTTP too, and under the same limit.
    const pagePath = `/api/conversations/list?at=${encodeURIComponent(before.at)}&id=${before.id}&limit=50`;
    expect((await h.http(pagePath, { token: pager.token })).status).toBe(200);
    expect((await h.http(pagePath, { token: pager.token })).status).toBe(429);
    const refused = await p.emitWithAck("conversation:list", { before, limit: 50 });
    expect(refused).toMatchObject({ ok: false, error: { code: "rate_limited" } });
    if (!refused.ok) expect(refused.error.retryAfterMs).toBeGreaterThan(0);
  });

  it("holds a user's syncs and pages sent all at once to what one at a time would get", async () => {
    const other = await h.db.user.create({ data: { name: "lim_burster" } });
    const groups = await h.db.conversation.createManyAndReturn({
      data: Array.from({ length: 200 }, (_, i) => ({ kind: "group" as const, title: `b${i}`, createdById: other.id })),
      select: { id: true },
    });
    const member = async (name: string) => {
      const u = await h.signUp(name);
      await h.db.membership.createMany({ data: groups.map((g) => ({ userId: u.user.id, conversationId: g.id })) });
      return u;
    };
    // A sync costs 3 of the 5 points (1, and 2 for 200 conversations): one at a time, two are served. Sent at
    // once over HTTP and both instances' sockets: each instance lets one in at a time, so only the two instances'
    // first may both pass before either is charged, and the second instance's charge may come after the first
    // instance's second sync took the last point: two, or three, never the five that one point each would let by.
    const syncer = await member("lim_burst_sync");
    const [s0, s1] = [await h.connect(syncer.token, 0), await h.connect(syncer.token, 1)];
    const statuses = await Promise.all([
      ...Array.from({ length: 4 }, () => h.http("/api/conversations", { token: syncer.token }).then((r) => r.status)),
      ...Array.from({ length: 2 }, (_, i) => (i ? s1 : s0).emitWithAck("sync").then((r) => (r.ok ? 200 : 429))),
    ]);
    const served = statuses.filter((status) => status === 200).length;
    expect(served).toBeGreaterThanOrEqual(2);
    expect(served).toBeLessThanOrEqual(3);
    // On one instance alone, exactly what one at a time gets.
    const single = await member("lim_burst_one");
    const one = await Promise.all(
      Array.from({ length: 5 }, () => h.http("/api/conversations", { token: single.token }).then((r) => r.status)),
    );
    expect(one.sort()).toEqual([200, 200, 429, 429, 429]);

    // A page of up to 100 rows costs 2 of the 3 points, paid first: one at a time one is served, and at once too.
    const pager = await member("lim_burst_page");
    const path = `/api/conversations/list?at=${encodeURIComponent("2999-01-01T00:00:00.000Z")}&id=1&limit=100`;
    const pages = await Promise.all(
      Array.from({ length: 5 }, () => h.http(path, { token: pager.token }).then((r) => r.status)),
    );
    expect(pages.sort()).toEqual([200, 429, 429, 429, 429]);
  });

  it("stops a sign-in flood per name and per address, with Retry-After", async () => {
    await h.signUp("lim_victim");
    const attempt = (name: string, password: string, from?: string) =>
      fetch(`${h.instances[0]!.url}/api/session`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(from ? { "x-forwarded-for": from } : {}) },
        body: JSON.stringify({ name, password }),
      });
    // Five guesses sent at once: each counts from before its password is checked, so only the first three are.
    const guesses = await Promise.all(Array.from({ length: 5 }, (_, i) => attempt("lim_victim", `guess number ${i}`)));
    expect(guesses.map((g) => g.status).sort()).toEqual([401, 401, 401, 429, 429]);
    // The name is locked for a while, whatever the password.
    const locked = await attempt("LIM_VICTIM", TEST_PASSWORD);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    // Not for the person themselves, from their own address: guesses cannot lock anyone out.
    expect((await attempt("lim_victim", TEST_PASSWORD, "203.0.113.7")).status).toBe(200);
    // Guesses from a second address are limited there too, whatever the password.
    const second = await Promise.all(
      Array.from({ length: 4 }, (_, i) => attempt("lim_victim", `another guess ${i}`, "203.0.113.8")),
    );
    expect(second.map((g) => g.status).sort()).toEqual([401, 401, 401, 429]);
    expect((await attempt("lim_victim", TEST_PASSWORD, "203.0.113.8")).status).toBe(429);
    // The address has used 6 of its 8 attempts.
    for (let i = 0; i < 2; i++) expect((await attempt(`lim_guess_${i}`, "some password")).status).toBe(401);
    const flood = await attempt("lim_guess_x", "some password");
    expect(flood.status).toBe(429);
    expect(await flood.json()).toMatchObject({
      ok: false,
      error: { code: "rate_limited", message: expect.stringMatching(/address/) },
    });
  });

  it("stops a sign-up flood per address", async () => {
    // Every person's account in this harness's database was signed up from this address, by the tests above too.
    const before = await h.db.user.count({ where: { passwordHash: { not: null } } });
    const results: number[] = [];
    for (let i = 0; i < SIGN_UPS + 2 - before; i++) {
      const res = await h.http("/api/users", {
        method: "POST",
        body: JSON.stringify({ name: `lim_flood_${i}`, password: "flood password" }),
      });
      results.push(res.status);
    }
    expect(results).toEqual([...Array<number>(SIGN_UPS - before).fill(200), 429, 429]);
    expect(await h.db.user.count({ where: { passwordHash: { not: null } } })).toBe(SIGN_UPS);
  });
});

describe("LAB=0", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(1, { lab: false });
  });
  afterAll(async () => {
    await h.close();
  });

  it("has no lab namespace at all", async () => {
    const { token } = await h.signUp("nolab");
    await expect(connectSocket(`${h.instances[0]!.url}/lab`, token, [])).rejects.toMatchObject({
      message: "Invalid namespace",
    });
  });
});
