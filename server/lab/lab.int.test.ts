import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Socket } from "socket.io-client";
import type { Snapshot } from "../contracts/index.ts";
import type {
  LabClientToServerEvents,
  LabServerToClientEvents,
  LabRunInput,
  LabRunResult,
  LabSample,
  LabWatched,
} from "../contracts/lab.ts";
import { connectSocket, nextEvent, startHarness, type Harness } from "../testing/harness.ts";

type LabSocket = Socket<LabServerToClientEvents, LabClientToServerEvents>;

let h: Harness;
const sockets: LabSocket[] = [];

function labSocket(token: string | undefined, instance = 0): Promise<LabSocket> {
  return connectSocket<LabSocket>(`${h.instances[instance]!.url}/lab`, token, sockets);
}

function once<E extends keyof LabServerToClientEvents>(socket: LabSocket, event: E, ms = 60_000) {
  return new Promise<Parameters<LabServerToClientEvents[E]>[0]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${event}`)), ms);
    socket.once(event, ((payload: Parameters<LabServerToClientEvents[E]>[0]) => {
      clearTimeout(timer);
      resolve(payload);
    }) as never);
  });
}

beforeAll(async () => {
  h = await startHarness(2);
});

afterAll(async () => {
  for (const s of sockets) s.disconnect();
  await h.close();
});

describe("the /lab namespace", () => {
  it("refuses a socket without a session", async () => {
    await expect(labSocket(undefined)).rejects.toMatchObject({
      message: "unauthorized",
      data: { code: "unauthorized" },
    });
  });

  it("validates every command's payload", async () => {
    const { token } = await h.signUp("lab_validate");
    const lab = await labSocket(token);
    expect(await lab.emitWithAck("lab:start", { strategies: ["nope"] } as never)).toMatchObject({
      ok: false,
      error: { code: "invalid" },
    });
    expect(await lab.emitWithAck("lab:start", { strategies: ["lua"], workload: { workers: 1000 } })).toMatchObject({
      ok: false,
      error: { code: "invalid", message: expect.stringMatching(/workers/) },
    });
    expect(await lab.emitWithAck("lab:replay", { scenario: "other" } as never)).toMatchObject({
      ok: false,
      error: { code: "invalid" },
    });
    expect(await lab.emitWithAck("bots:start", { rate: 500 })).toMatchObject({ ok: false, error: { code: "invalid" } });
    for (const command of ["lab:status", "bots:stop"] as const) {
      expect(await (lab as unknown as Socket).emitWithAck(command, { junk: true })).toEqual({
        ok: false,
        error: { code: "invalid", message: "This command takes no input." },
      });
      expect(await (lab as unknown as Socket).emitWithAck(command, null)).toMatchObject({ ok: true });
    }
    expect(await lab.emitWithAck("lab:stop", { runId: "abc" })).toMatchObject({
      ok: false,
      error: { code: "not_found" },
    });
    expect(await lab.emitWithAck("lab:stop", { runId: "" })).toEqual({
      ok: false,
      error: { code: "invalid", message: "That is not a run's id.", field: "runId" },
    });
  });

  it("runs a comparison, streams samples and reports to every lab tab of the user on both instances", async () => {
    const { token } = await h.signUp("lab_runner");
    const lab = await labSocket(token, 0);
    const otherTab = await labSocket(token, 1);
    const samples: LabSample[] = [];
    lab.on("lab:sampled", (s) => samples.push(s));
    const finished = once(lab, "lab:finished");
    const finishedElsewhere = once(otherTab, "lab:finished");
    const started = await lab.emitWithAck("lab:start", {
      strategies: ["naive", "lock", "watch", "lua"],
      workload: { users: 6, operations: 400, workers: 4, faults: { stepFailureRate: 0.1 } },
    });
    expect(started).toMatchObject({
      ok: true,
      run: { redis: "private", strategies: ["naive", "lock", "watch", "lua"] },
    });
    if (!started.ok) return;
    expect(await lab.emitWithAck("lab:start", { strategies: ["lua"] })).toMatchObject({
      ok: false,
      error: { code: "rate_limited" },
    });
    expect(await lab.emitWithAck("lab:status")).toMatchObject({ ok: true, run: { runId: started.run.runId } });

    const result: LabRunResult = await finished;
    expect((await finishedElsewhere).runId).toBe(started.run.runId);
    expect(result.results.map((r) => r.strategy)).toEqual(["naive", "lock", "watch", "lua"]);
    expect(result.end).toEqual({ reason: "completed" });
    const byName = Object.fromEntries(result.results.map((r) => [r.strategy, r]));
    expect(byName.naive!.drift.users).toBeGreaterThan(0);
    expect(byName.lua).toMatchObject({
      completed: 400,
      drift: { users: 0, amount: 0 },
      wrong: { counts: 0, totals: 0 },
    });
    expect(new Set(samples.map((s) => s.strategy))).toEqual(new Set(["naive", "lock", "watch", "lua"]));
    // The live badge view: the hot user and the next two, as the strategy left them.
    for (const r of result.results) {
      const last = samples.filter((s) => s.strategy === r.strategy).at(-1)!;
      expect(last.badges.map((b) => b.userId)).toEqual([1, 2, 3]);
      expect(last.badges.filter((b) => b.badge !== b.sum).length).toBeLessThanOrEqual(r.drift.users);
    }
    const luaBadges = samples.filter((s) => s.strategy === "lua").at(-1)!.badges;
    expect(luaBadges.every((b) => b.badge === b.sum)).toBe(true);
    // The hot user gets most operations: their badge is not an empty 0 = 0.
    expect(luaBadges[0]!.badge).toBeGreaterThan(0);
    expect(await lab.emitWithAck("lab:status")).toMatchObject({ ok: true, run: null });
  });

  it("stops a run on request", async () => {
    const { token, user } = await h.signUp("lab_stopper");
    const lab = await labSocket(token);
    const started = await lab.emitWithAck("lab:start", {
      strategies: ["lock"],
      workload: { operations: 1_000_000, faults: { stepDelayMs: 5, stepDelayRate: 1 } },
    });
    if (!started.ok) throw new Error(started.error.message);
    const finished = once(lab, "lab:finished");
    const sampled = once(lab, "lab:sampled");
    // Someone else on the same instance can see that a run is in progress but cannot stop it.
    const strangerToken = (await h.signUp("lab_stranger")).token;
    const stranger = await labSocket(strangerToken, 0);
    const watched: LabWatched[] = [];
    const strangerOwn: unknown[] = [];
    stranger.on("lab:watched", (e) => watched.push(e));
    stranger.on("lab:sampled", (e) => strangerOwn.push(e));
    stranger.on("lab:finished", (e) => strangerOwn.push(e));
    stranger.on("lab:failed", (e) => strangerOwn.push(e));
    // Their page is told the slot is taken, not given the run as if it were theirs; the other instance's is free.
    await sampled;
    const theirs = await stranger.emitWithAck("lab:status");
    expect(theirs).toMatchObject({
      ok: true,
      run: null,
      samples: [],
      othersRun: true,
      // But they can watch it (an attendee, the presenter's run): its settings and its line from the start, not
      // whose it is.
      watch: { run: { runId: started.run.runId, strategies: ["lock"] } },
    });
    expect(JSON.stringify(theirs)).not.toContain(user.name);
    if (!theirs.ok || !theirs.watch) throw new Error("no run to watch");
    expect(theirs.watch.samples[0]).toMatchObject({ strategy: "lock", t: 0 });
    const elsewhere = await labSocket(strangerToken, 1);
    const elsewhereSamples: unknown[] = [];
    elsewhere.on("lab:sampled", (s) => elsewhereSamples.push(s));
    elsewhere.on("lab:watched", (s) => elsewhereSamples.push(s));
    expect(await elsewhere.emitWithAck("lab:status")).toMatchObject({
      ok: true,
      run: null,
      othersRun: false,
      watch: null,
    });
    // A page of the owner that opens mid-run gets the run and its samples so far, to draw it from its start.
    const mine = await lab.emitWithAck("lab:status");
    if (!mine.ok) throw new Error(mine.error.message);
    expect(mine).toMatchObject({ run: { runId: started.run.runId }, othersRun: false });
    expect(mine.samples.length).toBeGreaterThan(0);
    expect(mine.samples[0]).toMatchObject({ strategy: "lock", t: 0 });
    expect(await stranger.emitWithAck("lab:stop", { runId: started.run.runId })).toMatchObject({
      ok: false,
      error: { code: "forbidden" },
    });
    // Nor start one beside it: one run at a time per server, and a hint of when to look again. A refused start
    // changed nothing: no page is told the slot changed (each would fetch the watched run's samples again).
    const slotNews: unknown[] = [];
    lab.on("lab:slot", (e) => slotNews.push(e));
    expect(await stranger.emitWithAck("lab:start", { strategies: ["lua"], workload: {} })).toMatchObject({
      ok: false,
      error: { code: "rate_limited", retryAfterMs: 5000, message: expect.stringMatching(/^Someone else's lab run/) },
    });
    // The owner is told it is their own run (the stranger, who cannot stop it, is not told to).
    expect(await lab.emitWithAck("lab:start", { strategies: ["lua"], workload: {} })).toMatchObject({
      ok: false,
      error: { code: "rate_limited", message: expect.stringMatching(/^Your lab run/) },
    });
    expect(slotNews).toEqual([]);
    const strangerSawEnd = new Promise<LabWatched>((resolve) =>
      stranger.on("lab:watched", (e) => e.kind === "finished" && resolve(e)),
    );
    const freed = once(stranger, "lab:slot");
    expect(await lab.emitWithAck("lab:stop", { runId: started.run.runId })).toEqual({ ok: true });
    expect(await freed).toEqual({ busy: false });
    expect(await stranger.emitWithAck("lab:status")).toMatchObject({ ok: true, othersRun: false });
    const result = await finished;
    expect(result.results[0]!.completed).toBeLessThan(1_000_000);
    // The watcher saw it live and saw it end, stopped by "its owner"; none of it as its own, and the other
    // instance's page (its slot free) was sent nothing.
    expect(await strangerSawEnd).toMatchObject({
      kind: "finished",
      result: { runId: started.run.runId, end: { reason: "stopped", by: "its owner" } },
    });
    const samples = watched.filter((e) => e.kind === "sampled");
    expect(samples.length).toBeGreaterThan(0);
    expect(samples.every((e) => e.sample.runId === started.run.runId)).toBe(true);
    expect(strangerOwn).toEqual([]);
    expect(elsewhereSamples).toEqual([]);
    // The page says the run was stopped, and by whom; not that it finished.
    expect(result.end).toEqual({ reason: "stopped", by: user.name });
  });

  it("replays the classic interleavings for each strategy, and refuses an unknown one", async () => {
    const { token } = await h.signUp("lab_story");
    const lab = await labSocket(token);
    const race = await lab.emitWithAck("lab:replay", { scenario: "race" });
    if (!race.ok) throw new Error(race.error.message);
    expect(race.stories.map((s) => [s.strategy, s.verdict])).toEqual([
      ["naive", "drift"],
      ["lock", "wrong"],
      ["watch", "correct"],
      ["lua", "correct"],
    ]);
    expect(race.stories[0]!.steps.at(-1)).toMatchObject({ badge: 1, list: 0, muted: false });
    const mute = await lab.emitWithAck("lab:replay", { scenario: "mute" });
    if (!mute.ok) throw new Error(mute.error.message);
    expect(mute.stories.map((s) => [s.strategy, s.verdict])).toEqual([
      ["naive", "drift"],
      ["lock", "correct"],
      ["watch", "correct"],
      ["lua", "correct"],
    ]);
    expect(await lab.emitWithAck("lab:replay", { scenario: "unmute" as "mute" })).toMatchObject({
      ok: false,
      error: { code: "invalid" },
    });
  });
});

describe("the bots", () => {
  it("chat as bot accounts of the user who started them, only with that user, until that user stops them", async () => {
    const { token, user } = await h.signUp("lab_botowner");
    const chat = await h.connect(token, 1);
    const lab = await labSocket(token, 0);
    const changed = once(lab, "bots:changed", 10_000);
    const message = nextEvent(chat, "message:new", ({ message }) => message.senderId !== user.id, 15_000);
    const started = await lab.emitWithAck("bots:start", { rate: 20, count: 2 });
    const botNames = [`bot-${user.id}-1`, `bot-${user.id}-2`];
    expect(started).toMatchObject({ ok: true, bots: { running: true, users: botNames } });
    expect(botNames).toContain((await message).message.senderName);
    expect((await changed).running).toBe(true);

    // The owner sees one direct conversation per bot, each member marked as a bot.
    const snapshot = (await h.http("/api/conversations", { token })).body as Snapshot;
    expect(snapshot.conversations.map((c) => [c.kind, c.title]).sort()).toEqual(botNames.map((n) => ["direct", n]));
    for (const c of snapshot.conversations) {
      expect(c.members.find((m) => m.id !== user.id)).toMatchObject({ bot: true });
    }
    const botIds = snapshot.conversations.map((c) => c.members.find((m) => m.id !== user.id)!.id);
    const bots = await h.db.user.findMany({ where: { id: { in: botIds } } });
    expect(bots.map((b) => [b.isBot, b.passwordHash])).toEqual([
      [true, null],
      [true, null],
    ]);

    // A stranger's stop stops only the stranger's (no) bots.
    const stranger = await labSocket((await h.signUp("lab_botstranger")).token, 1);
    expect(await stranger.emitWithAck("bots:stop")).toMatchObject({ ok: true, bots: { running: false, sent: 0 } });
    expect(await lab.emitWithAck("lab:status")).toMatchObject({ ok: true, bots: { running: true } });
    await expect
      .poll(async () => {
        const status = await lab.emitWithAck("lab:status");
        return status.ok ? status.bots.sent : -1;
      })
      .toBeGreaterThan(0);

    const stopped = await lab.emitWithAck("bots:stop");
    expect(stopped).toMatchObject({ ok: true, bots: { running: false } });
    // Their sessions end with them.
    expect(await h.db.session.count({ where: { userId: { in: botIds } } })).toBe(0);
  });

  it("are out of reach for people: no sign-up with a bot name, no conversation with a bot, no sign-in", async () => {
    const { token, user } = await h.signUp("lab_botreach");
    const lab = await labSocket(token);
    const started = await lab.emitWithAck("bots:start", { rate: 0.1, count: 1 });
    if (!started.ok) throw new Error(started.error.message);
    await lab.emitWithAck("bots:stop");
    const botName = `bot-${user.id}-1`;
    const other = await h.signUp("lab_botreach2");
    const create = await h.http("/api/conversations", {
      method: "POST",
      token: other.token,
      body: JSON.stringify({ memberNames: [botName] }),
    });
    expect(create).toMatchObject({ status: 404, body: { error: { code: "not_found" } } });
    const signUp = await h.http("/api/users", {
      method: "POST",
      body: JSON.stringify({ name: "bot-9-9", password: "long enough" }),
    });
    expect(signUp).toMatchObject({
      status: 400,
      body: { error: { code: "invalid", message: "Names starting with 'bot-' are kept for the lab's bots." } },
    });
    const signIn = await h.http("/api/session", {
      method: "POST",
      body: JSON.stringify({ name: botName, password: "long enough" }),
    });
    expect(signIn).toMatchObject({ status: 401, body: { error: { code: "unauthorized" } } });
  });
});

describe("the bots, started and stopped all at once", () => {
  it("leave no bot running, no bot session and no bot socket once bots:stop answers", async () => {
    const { token, user } = await h.signUp("lab_botrace");
    const lab = await labSocket(token, 0);
    // The first start alone creates the bot accounts; then three starts at once, once more with the accounts there.
    const first = await Promise.all([1, 2].map(() => lab.emitWithAck("bots:start", { rate: 4, count: 1 })));
    expect(first.map((r) => r.ok)).toEqual([true, true]);
    const racing = await Promise.all([1, 2, 3].map(() => lab.emitWithAck("bots:start", { rate: 4, count: 1 })));
    expect(racing.map((r) => r.ok)).toEqual([true, true, true]);

    expect(await lab.emitWithAck("bots:stop")).toMatchObject({ ok: true, bots: { running: false } });
    const bots = await h.db.user.findMany({ where: { name: { startsWith: `bot-${user.id}-` } }, select: { id: true } });
    expect(bots).toHaveLength(1);
    expect(await h.db.session.count({ where: { userId: bots[0]!.id } })).toBe(0);
    for (const instance of h.instances) {
      const botSockets = [...instance.app.io.of("/").sockets.values()].filter((s) => s.data.user.id === bots[0]!.id);
      expect(botSockets).toHaveLength(0);
    }
    expect(await lab.emitWithAck("lab:status")).toMatchObject({ ok: true, bots: { running: false } });
  });
});

describe("the bots, from two instances", () => {
  it("are seen, replaced and stopped from a lab tab on another instance than the one that started them", async () => {
    const { token, user } = await h.signUp("lab_bottwo");
    const [here, there] = [await labSocket(token, 0), await labSocket(token, 1)];
    const botSessions = async () => {
      const bots = await h.db.user.findMany({
        where: { name: { startsWith: `bot-${user.id}-` } },
        select: { id: true },
      });
      return h.db.session.count({ where: { userId: { in: bots.map((b) => b.id) } } });
    };
    expect(await here.emitWithAck("bots:start", { rate: 0.1, count: 2 })).toMatchObject({ ok: true });
    expect(await there.emitWithAck("lab:status")).toMatchObject({
      ok: true,
      bots: { running: true, users: [`bot-${user.id}-1`, `bot-${user.id}-2`] },
    });

    // Started again there: the bots here are replaced, not joined by a second set.
    expect(await there.emitWithAck("bots:start", { rate: 0.1, count: 1 })).toMatchObject({ ok: true });
    expect(await here.emitWithAck("lab:status")).toMatchObject({
      ok: true,
      bots: { running: true, users: [`bot-${user.id}-1`] },
    });
    expect(await botSessions()).toBe(1);

    // And stopped from here, where they do not run.
    expect(await here.emitWithAck("bots:stop")).toMatchObject({
      ok: true,
      bots: { running: false, users: [`bot-${user.id}-1`] },
    });
    expect(await botSessions()).toBe(0);
    expect(await there.emitWithAck("lab:status")).toMatchObject({ ok: true, bots: { running: false } });
  });
});

describe("the run slot's share per user", () => {
  let hb: Harness;
  beforeAll(async () => {
    hb = await startHarness(1, { limits: { labRun: { points: 3, durationS: 600 } } });
  });
  afterAll(async () => {
    await hb.close();
  });

  it("charges a run the seconds it held the slot and refuses a start past the user's share, not others'", async () => {
    const lab = await connectSocket<LabSocket>(
      `${hb.instances[0]!.url}/lab`,
      (await hb.signUp("lab_hog")).token,
      sockets,
    );
    const long: LabRunInput = {
      strategies: ["lock"],
      workload: { operations: 1_000_000, faults: { stepDelayMs: 5, stepDelayRate: 1 } },
    };
    const started = await lab.emitWithAck("lab:start", long);
    if (!started.ok) throw new Error(started.error.message);
    // Held for at least 4 s (of a share of 3), whatever the machine's speed: the server counts from before its answer.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const finished = once(lab, "lab:finished");
    expect(await lab.emitWithAck("lab:stop", { runId: started.run.runId })).toEqual({ ok: true });
    await finished;
    // The charge is made as the run ends, before its report goes out: the next start is refused at once.
    expect(await lab.emitWithAck("lab:start", { strategies: ["lua"], workload: {} })).toMatchObject({
      ok: false,
      error: { code: "rate_limited", retryAfterMs: expect.any(Number), message: expect.stringMatching(/share/) },
    });
    // Someone else's share is theirs: their start goes ahead on the freed slot.
    const other = await connectSocket<LabSocket>(
      `${hb.instances[0]!.url}/lab`,
      (await hb.signUp("lab_next")).token,
      sockets,
    );
    const next = await other.emitWithAck("lab:start", { strategies: ["lua"], workload: { operations: 50 } });
    expect(next).toMatchObject({ ok: true });
    await once(other, "lab:finished");
  });
});
