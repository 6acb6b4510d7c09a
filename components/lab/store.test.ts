import { describe, expect, it } from "vitest";
import type { LabRunInfo, LabRunResult, LabSample, Result } from "@/server/contracts";
import { DEFAULT_WORKLOAD } from "@/server/contracts/lab-defaults";
import { runStatusText } from "./explain";
import {
  chartRows,
  createLabStore,
  DEFAULT_FORM,
  latestBadges,
  RUN_ENDED_AWAY,
  sharedTimeAxis,
  STOP_UNANSWERED,
  WATCHED_FAILED,
  type LabTransport,
} from "./store";

function transport(overrides: Partial<LabTransport> = {}): LabTransport & { starts: unknown[] } {
  const starts: unknown[] = [];
  return {
    starts,
    start: async (input) => {
      starts.push(input);
      return {
        ok: true,
        run: { runId: "r1", strategies: input.strategies, notices: [], redis: "private" } as unknown as LabRunInfo,
      };
    },
    stop: async () => ({ ok: true }),
    status: async () => ({ ok: false, error: { code: "unavailable", message: "down" } }),
    replay: async () => ({ ok: false, error: { code: "unavailable", message: "down" } }),
    startBots: async () => ({ ok: false, error: { code: "not_found", message: "No such user: bob." } }),
    stopBots: async (): Promise<Result<{ bots: never }>> => ({
      ok: false,
      error: { code: "unavailable", message: "x" },
    }),
    ...overrides,
  };
}

const idle = { running: false, rate: 0, users: [], sent: 0, reads: 0, errors: 0 };

const sample = (strategy: LabSample["strategy"], t: number, runId = "r1"): LabSample => ({
  runId,
  strategy,
  t,
  opsPerSec: t * 100,
  completed: t * 10,
  drift: { users: strategy === "naive" ? 1 : 0, amount: 1 },
  badges: [{ userId: 1, badge: 3, sum: strategy === "naive" ? 2 : 3 }],
});

describe("lab store", () => {
  it("starts a run with the chosen strategies in their fixed order and the form", async () => {
    const t = transport();
    const store = createLabStore(t);
    store.getState().toggleStrategy("lock");
    store.getState().toggleStrategy("lock");
    store.getState().toggleStrategy("watch");
    await store.getState().start();
    expect(t.starts).toEqual([{ strategies: ["naive", "lock", "lua"], workload: DEFAULT_FORM }]);
    expect(store.getState()).toMatchObject({ status: "running", run: { runId: "r1" } });
  });

  it("keeps samples of its own run only, and the result when it finishes", async () => {
    const store = createLabStore(transport());
    await store.getState().start();
    store.getState().receiveSample(sample("naive", 0.25));
    store.getState().receiveSample(sample("lua", 0.25, "other"));
    store.getState().receiveFinished({ runId: "other", results: [], notices: [], end: { reason: "completed" } });
    expect(store.getState().status).toBe("running");
    store.getState().receiveFinished({ runId: "r1", results: [], notices: [], end: { reason: "completed" } });
    expect(store.getState().samples.naive).toHaveLength(1);
    expect(store.getState().samples.lua).toHaveLength(0);
    expect(store.getState().status).toBe("finished");
  });

  it("a page that opens mid-run draws its own run from the samples so far, with the run's settings", () => {
    const store = createLabStore(transport());
    const workload = {
      ...DEFAULT_WORKLOAD,
      operations: 8000,
      faults: { ...DEFAULT_WORKLOAD.faults, redisRestart: true },
    };
    const run = { runId: "r1", strategies: ["lua", "naive"], notices: [], redis: "private", workload };
    store.getState().receiveStatus({
      run: run as unknown as LabRunInfo,
      samples: [sample("naive", 0), sample("naive", 0.25), sample("lua", 0)],
      othersRun: false,
      watch: null,
      bots: idle,
    });
    const s = store.getState();
    expect(s.status).toBe("running");
    expect([s.samples.naive.length, s.samples.lua.length, s.samples.lock.length]).toEqual([2, 1, 0]);
    expect(s.form).toMatchObject({ operations: 8000, faults: { redisRestart: true } });
    expect(s.form).not.toHaveProperty("lock");
    // In the strategies' fixed order, as the form shows them.
    expect(s.strategies).toEqual(["naive", "lua"]);
    expect(s.othersRun).toBe(false);
  });

  it("a status answer older than the page's news neither revives a finished run nor leaves a missed end running", async () => {
    const workload = DEFAULT_WORKLOAD;
    const info = (runId: string) =>
      ({ runId, strategies: ["naive"], notices: [], redis: "private", workload }) as unknown as LabRunInfo;
    const store = createLabStore(transport());
    await store.getState().start();
    store.getState().receiveFinished({ runId: "r1", results: [], notices: [], end: { reason: "completed" } });
    // An answer read before the finish, delivered after it: the page stays on the finished run and its result.
    store.getState().receiveStatus({ run: info("r1"), samples: [], othersRun: false, watch: null, bots: idle });
    expect([store.getState().status, store.getState().result?.runId]).toEqual(["finished", "r1"]);

    // A page showing r2 running, that missed its end while offline, is told on reconnect: no run of its own.
    store.getState().receiveStatus({
      run: info("r2"),
      samples: [sample("naive", 0, "r2")],
      othersRun: false,
      watch: null,
      bots: idle,
    });
    expect([store.getState().status, store.getState().run?.runId]).toEqual(["running", "r2"]);
    // Back while it still runs: the server's line is whole, the samples missed meanwhile included.
    const line = [0, 0.25, 0.5, 0.75].map((t) => sample("naive", t, "r2"));
    store.getState().receiveStatus({ run: info("r2"), samples: line, othersRun: false, watch: null, bots: idle });
    expect(store.getState().samples.naive).toHaveLength(4);
    store.getState().receiveStatus({ run: null, samples: [], othersRun: false, watch: null, bots: idle });
    expect(store.getState().status).toBe("idle");
    expect(store.getState().error).toBe(RUN_ENDED_AWAY);
    // A run of this user's it did not know of (started in another tab) is taken up.
    store.getState().receiveStatus({ run: info("r3"), samples: [], othersRun: false, watch: null, bots: idle });
    expect([store.getState().status, store.getState().run?.runId, store.getState().error]).toEqual([
      "running",
      "r3",
      null,
    ]);
  });

  it("edits of an idle page are put aside while another tab's run shows its settings, and come back after it", () => {
    const workload = { ...DEFAULT_WORKLOAD, operations: 8000 };
    const info = (runId: string) =>
      ({ runId, strategies: ["lua"], notices: [], redis: "private", workload }) as unknown as LabRunInfo;
    const store = createLabStore(transport());
    store.getState().setForm({ users: 7 });
    store.getState().setFaults({ stepDelayMs: 40 });
    store.getState().toggleStrategy("naive");
    const mine = { form: store.getState().form, strategies: store.getState().strategies };

    store.getState().receiveStatus({ run: info("r1"), samples: [], othersRun: false, watch: null, bots: idle });
    expect(store.getState().form.operations).toBe(8000);
    expect(store.getState().strategies).toEqual(["lua"]);
    expect(store.getState().draft).toEqual(mine);
    store.getState().receiveFinished({ runId: "r1", results: [], notices: [], end: { reason: "completed" } });
    expect({ form: store.getState().form, strategies: store.getState().strategies }).toEqual(mine);
    expect(store.getState().draft).toBeNull();

    // Missed while away, or failed: the edits come back all the same.
    store.getState().receiveStatus({ run: info("r2"), samples: [], othersRun: false, watch: null, bots: idle });
    store.getState().receiveStatus({ run: null, samples: [], othersRun: false, watch: null, bots: idle });
    expect(store.getState().form).toEqual(mine.form);
    store.getState().receiveStatus({ run: info("r3"), samples: [], othersRun: false, watch: null, bots: idle });
    store.getState().receiveFailed("r3", "Redis is down");
    expect(store.getState().form).toEqual(mine.form);
  });

  it("a page with no edits of its own keeps the settings of the run it watched, ready to run them again", async () => {
    const workload = { ...DEFAULT_WORKLOAD, operations: 8000 };
    const run = { runId: "r9", strategies: ["lua"], notices: [], redis: "private", workload };
    const t = transport();
    const store = createLabStore(t);
    store
      .getState()
      .receiveStatus({ run: run as unknown as LabRunInfo, samples: [], othersRun: false, watch: null, bots: idle });
    store.getState().receiveFinished({ runId: "r9", results: [], notices: [], end: { reason: "completed" } });
    expect([store.getState().form.operations, store.getState().draft]).toEqual([8000, null]);
    // And a page's own run puts nothing aside: its edits are what it ran.
    store.getState().setForm({ users: 3 });
    await store.getState().start();
    store.getState().receiveFinished({ runId: "r1", results: [], notices: [], end: { reason: "completed" } });
    expect([store.getState().form.users, store.getState().draft]).toEqual([3, null]);
  });

  it("a page follows someone else's run on the server, its own form left alone, to the end", async () => {
    const workload = { ...DEFAULT_WORKLOAD, operations: 8000 };
    const theirs = { runId: "w1", strategies: ["naive", "lua"], notices: [], redis: "private", workload };
    const watch = { run: theirs as unknown as LabRunInfo, samples: [sample("naive", 0, "w1")] };
    const store = createLabStore(transport());
    store.getState().setForm({ users: 7 });
    // Before the status answer the page shows no run: what it hears of someone else's is not drawn.
    store.getState().receiveWatched({ kind: "sampled", sample: sample("naive", 0.25, "w1") });
    store.getState().receiveWatched({ kind: "failed", runId: "w1" });
    expect([store.getState().status, store.getState().samples.naive.length]).toEqual(["idle", 0]);

    store.getState().receiveStatus({ run: null, samples: [], othersRun: true, watch, bots: idle });
    const s = store.getState();
    expect([s.status, s.run?.runId, s.watching, s.samples.naive.length]).toEqual(["watching", "w1", true, 1]);
    expect([s.form.users, s.form.operations, s.strategies.length]).toEqual([7, DEFAULT_FORM.operations, 4]);
    store.getState().receiveWatched({ kind: "sampled", sample: sample("naive", 0.25, "w1") });
    store.getState().receiveWatched({ kind: "sampled", sample: sample("lua", 0.25, "other") });
    // The user's own events are not the watched run's.
    store.getState().receiveSample(sample("lua", 0.5, "w1x"));
    store.getState().receiveFinished({ runId: "mine", results: [], notices: [], end: { reason: "completed" } });
    expect([
      store.getState().status,
      store.getState().samples.naive.length,
      store.getState().samples.lua.length,
    ]).toEqual(["watching", 2, 0]);
    // Back after a disconnect, still going: the server's line is whole.
    const line = [0, 0.25, 0.5].map((t) => sample("naive", t, "w1"));
    store
      .getState()
      .receiveStatus({ run: null, samples: [], othersRun: true, watch: { ...watch, samples: line }, bots: idle });
    expect(store.getState().samples.naive.length).toBe(3);
    // Its end is shown as the owner's page shows it; Stop is not this page's.
    await store.getState().stop();
    const end = { reason: "stopped" as const, by: "its owner" };
    store.getState().receiveWatched({ kind: "finished", result: { runId: "w1", results: [], notices: [], end } });
    expect([store.getState().status, store.getState().result?.runId, store.getState().watching]).toEqual([
      "stopped",
      "w1",
      true,
    ]);
    // The slot's next answer (freed) does not take it up again; the page's own run is its own.
    store.getState().receiveStatus({ run: null, samples: [], othersRun: false, watch: null, bots: idle });
    expect(store.getState().status).toBe("stopped");
    await store.getState().start();
    expect([store.getState().status, store.getState().watching]).toEqual(["running", false]);
  });

  it("someone else's run is offered, not taken up, over the page's own results, and taken up when asked", async () => {
    const theirs = { runId: "w2", strategies: ["lua"], notices: [], redis: "private", workload: DEFAULT_WORKLOAD };
    const watch = { run: theirs as unknown as LabRunInfo, samples: [sample("lua", 0, "w2")] };
    const status = { ok: true as const, run: null, samples: [], othersRun: true, watch, bots: idle };
    const store = createLabStore(transport({ status: async () => status }));
    await store.getState().start();
    store.getState().receiveFinished({ runId: "r1", results: [], notices: [], end: { reason: "completed" } });
    store.getState().receiveStatus(status);
    expect([store.getState().status, store.getState().result?.runId, store.getState().offer]).toEqual([
      "finished",
      "r1",
      "w2",
    ]);
    await store.getState().watchOffered();
    expect([store.getState().status, store.getState().run?.runId, store.getState().offer]).toEqual([
      "watching",
      "w2",
      null,
    ]);
    // And its failure says so without the owner's reason.
    store.getState().receiveWatched({ kind: "failed", runId: "w2" });
    expect([store.getState().status, store.getState().error]).toEqual(["failed", WATCHED_FAILED]);
  });

  it("a start refused because someone else's run took the slot offers that run", async () => {
    const theirs = { runId: "w3", strategies: ["lua"], notices: [], redis: "private", workload: DEFAULT_WORKLOAD };
    const status = {
      ok: true as const,
      run: null,
      samples: [],
      othersRun: true,
      watch: { run: theirs as unknown as LabRunInfo, samples: [] },
      bots: idle,
    };
    const store = createLabStore(
      transport({
        start: async () => ({ ok: false, error: { code: "rate_limited", message: "Someone else's lab run is going" } }),
        status: async () => status,
      }),
    );
    await store.getState().start();
    expect([store.getState().status, store.getState().offer]).toEqual(["failed", "w3"]);
  });

  it("a watched run that ended while the page was away leaves it idle and blank, and a status older than its end is ignored", () => {
    const theirs = { runId: "w1", strategies: ["lua"], notices: [], redis: "private", workload: DEFAULT_WORKLOAD };
    const watch = { run: theirs as unknown as LabRunInfo, samples: [sample("lua", 0, "w1")] };
    const store = createLabStore(transport());
    store.getState().receiveStatus({ run: null, samples: [], othersRun: true, watch, bots: idle });
    store.getState().receiveStatus({ run: null, samples: [], othersRun: false, watch: null, bots: idle });
    expect([store.getState().status, store.getState().watching, store.getState().samples.lua.length]).toEqual([
      "idle",
      false,
      0,
    ]);

    store.getState().receiveStatus({ run: null, samples: [], othersRun: true, watch, bots: idle });
    const result = { runId: "w1", results: [], notices: [], end: { reason: "completed" as const } };
    store.getState().receiveWatched({ kind: "finished", result });
    store.getState().receiveStatus({ run: null, samples: [], othersRun: true, watch, bots: idle });
    expect(store.getState().status).toBe("finished");
  });

  it("draws the user's own run from another instance when it shows none, as before watching existed", () => {
    const store = createLabStore(transport());
    store.getState().receiveSample(sample("naive", 0, "elsewhere"));
    store.getState().receiveFinished({ runId: "elsewhere", results: [], notices: [], end: { reason: "completed" } });
    expect([store.getState().samples.naive.length, store.getState().status]).toEqual([1, "finished"]);
  });
  it("a long line opened mid-run keeps its start: thinned, not cut", () => {
    const run = { runId: "r1", strategies: ["lock"], notices: [], redis: "private", workload: DEFAULT_WORKLOAD };
    const store = createLabStore(transport());
    const long = Array.from({ length: 2000 }, (_, i) => sample("lock", i / 4));
    store
      .getState()
      .receiveStatus({ run: run as unknown as LabRunInfo, samples: long, othersRun: false, watch: null, bots: idle });
    const line = store.getState().samples.lock;
    expect(line.length).toBeLessThanOrEqual(600);
    expect([line[0]?.t, line.at(-1)?.t]).toEqual([0, 1999 / 4]);
  });

  it("knows when another user's run holds the slot, and when it is free again", () => {
    const store = createLabStore(transport());
    store.getState().receiveStatus({ run: null, samples: [], othersRun: true, watch: null, bots: idle });
    expect([store.getState().status, store.getState().othersRun]).toEqual(["idle", true]);
    store.getState().receiveStatus({ run: null, samples: [], othersRun: false, watch: null, bots: idle });
    expect([store.getState().status, store.getState().othersRun]).toEqual(["idle", false]);
  });

  it("says a run it stopped, or that someone or the time limit stopped, was stopped, not finished", async () => {
    const stopped: LabRunResult = { runId: "r1", results: [], notices: [], end: { reason: "stopped", by: "alice" } };
    const here = createLabStore(transport());
    await here.getState().start();
    await here.getState().stop();
    here.getState().receiveFinished(stopped);
    expect(here.getState().status).toBe("stopped");
    expect(runStatusText(here.getState().status, here.getState().result?.end, here.getState().stopAsked)).toBe(
      "stopped",
    );

    // Another tab of the same person pressed Stop: this one names who did.
    const elsewhere = createLabStore(transport());
    await elsewhere.getState().start();
    elsewhere.getState().receiveFinished(stopped);
    const s = elsewhere.getState();
    expect(runStatusText(s.status, s.result?.end, s.stopAsked)).toBe("stopped by alice");

    // The server's time limit.
    const capped = createLabStore(transport());
    await capped.getState().start();
    capped.getState().receiveFinished({ ...stopped, end: { reason: "timeLimit", limitMinutes: 10 } });
    const c = capped.getState();
    expect(runStatusText(c.status, c.result?.end, c.stopAsked)).toBe("stopped at the 10-minute limit");

    // A run that did every operation finished; a refused Stop leaves the page as it was.
    const done = createLabStore(
      transport({ stop: async () => ({ ok: false, error: { code: "forbidden", message: "no" } }) }),
    );
    await done.getState().start();
    await done.getState().stop();
    expect(done.getState().stopAsked).toBe(false);
    done.getState().receiveFinished({ ...stopped, end: { reason: "completed" } });
    const d = done.getState();
    expect(runStatusText(d.status, d.result?.end, d.stopAsked)).toBe("finished");
  });

  it("says stopping while a Stop is asked, and says so when Stop gets no answer, so it can be pressed again", async () => {
    let answer!: (res: Result) => void;
    const store = createLabStore(transport({ stop: () => new Promise<Result>((resolve) => (answer = resolve)) }));
    await store.getState().start();
    const stopping = store.getState().stop();
    const s = store.getState();
    expect(runStatusText(s.status, s.result?.end, s.stopAsked)).toBe("stopping…");
    answer({ ok: true });
    await stopping;

    const offline = createLabStore(transport({ stop: () => Promise.reject(new Error("operation has timed out")) }));
    await offline.getState().start();
    await offline.getState().stop();
    expect(offline.getState()).toMatchObject({ status: "running", stopAsked: false, error: STOP_UNANSWERED });
    // Pressed again: the old error goes while the new Stop is asked.
    void offline.getState().stop();
    expect(offline.getState()).toMatchObject({ stopAsked: true, error: null });

    // The Stop reached the server though its answer was lost: once the run ends, the error goes.
    const lost = createLabStore(transport({ stop: () => Promise.reject(new Error("operation has timed out")) }));
    await lost.getState().start();
    await lost.getState().stop();
    lost.getState().receiveFinished({ runId: "r1", results: [], notices: [], end: { reason: "stopped", by: "alice" } });
    expect(lost.getState()).toMatchObject({ status: "stopped", error: null });

    // The run's end arrives before the Stop's answer times out: no error is left under a stopped run.
    let fail!: (err: Error) => void;
    const late = createLabStore(transport({ stop: () => new Promise<Result>((_, reject) => (fail = reject)) }));
    await late.getState().start();
    const waiting = late.getState().stop();
    late.getState().receiveFinished({ runId: "r1", results: [], notices: [], end: { reason: "stopped", by: "alice" } });
    fail(new Error("operation has timed out"));
    await waiting;
    expect(late.getState()).toMatchObject({ status: "stopped", error: null });
  });

  it("shows the server's error when a run or the bots cannot start", async () => {
    const store = createLabStore(
      transport({
        start: async () => ({ ok: false, error: { code: "rate_limited", message: "A lab run is in progress" } }),
      }),
    );
    await store.getState().start();
    expect(store.getState()).toMatchObject({ status: "failed", error: "A lab run is in progress" });
    await store.getState().startBots();
    expect(store.getState().botsError).toBe("No such user: bob.");
  });

  it("says why its session ended, and stays signed out when the disconnect that follows comes", () => {
    const store = createLabStore(transport());
    store.getState().setConnection("connected");
    store.getState().receiveSessionEnded("signed_out_everywhere");
    store.getState().setConnection("offline");
    expect(store.getState()).toMatchObject({ connection: "signedOut", ended: { reason: "signed_out_everywhere" } });

    // A reason this client does not know: signed out all the same, without one.
    const other = createLabStore(transport());
    other.getState().receiveSessionEnded("password_changed");
    expect(other.getState()).toMatchObject({ connection: "signedOut", ended: { reason: null } });
    // A visit without a session: nothing ended.
    const visitor = createLabStore(transport());
    visitor.getState().setConnection("signedOut");
    expect(visitor.getState()).toMatchObject({ connection: "signedOut", ended: null });
  });

  it("steps through a story within its bounds", async () => {
    const story = (n: number) => ({
      strategy: "lua" as const,
      scenario: "race" as const,
      steps: Array.from({ length: n }, () => ({
        actor: "sender" as const,
        action: "x",
        list: 0,
        badge: 0,
        muted: false,
      })),
      truth: 0,
      truthBadge: 0,
      verdict: "correct" as const,
      summary: "",
    });
    const store = createLabStore(transport({ replay: async () => ({ ok: true, stories: [story(3), story(5)] }) }));
    await store.getState().loadStory("race");
    expect(store.getState().story.step).toBe(1);
    store.getState().stepStory(-1);
    expect(store.getState().story.step).toBe(1);
    for (let i = 0; i < 10; i++) store.getState().stepStory(1);
    expect(store.getState().story.step).toBe(5);
  });

  it("lines up samples of several strategies by time for the charts", () => {
    const rows = chartRows(
      { naive: [sample("naive", 0.25), sample("naive", 0.5)], lock: [], watch: [], lua: [sample("lua", 0.26)] },
      (s) => s.opsPerSec,
    );
    expect(rows).toEqual([
      { t: 0.25, naive: 25, lua: 26 },
      { t: 0.5, naive: 50 },
    ]);
  });

  it("draws a strategy's line from its start to its end-of-run value, where it ended, however short its run", () => {
    const empty = { naive: [], lock: [], watch: [], lua: [] };
    // Small runs: the start sample at 0 and the end-of-run sample 0.1 s or 0.13 s later, nothing live in between.
    expect(
      chartRows(
        {
          ...empty,
          naive: [sample("naive", 0), sample("naive", 0.1)],
          lock: [sample("lock", 0), sample("lock", 0.13)],
        },
        (s) => s.opsPerSec,
      ),
    ).toEqual([
      { t: 0, naive: 0, lock: 0 },
      { t: 0.1, naive: 10 },
      { t: 0.13, lock: 13 },
    ]);
    // Ending 20 ms after its last live sample (taken for 0.5 s), it draws on from that sample to its end.
    const rows = chartRows(
      { ...empty, lua: [sample("lua", 0), sample("lua", 0.25), sample("lua", 0.5), sample("lua", 0.52)] },
      (s) => s.opsPerSec,
    );
    expect(rows.map((r) => [r.t, r.lua])).toEqual([
      [0, 0],
      [0.25, 25],
      [0.5, 50],
      [0.52, 52],
    ]);
  });

  it("puts every strategy of both charts on one time axis, as long as the longest, in whole ticks", () => {
    const empty = { naive: [], lock: [], watch: [], lua: [] };
    expect(sharedTimeAxis(empty)).toEqual({ domain: [0, 0.25], ticks: [0, 0.25] });
    const axis = sharedTimeAxis({
      ...empty,
      naive: [sample("naive", 0.3), sample("naive", 0.6)],
      lock: [sample("lock", 1), sample("lock", 4.2)],
    });
    expect(axis).toEqual({ domain: [0, 5], ticks: [0, 1, 2, 3, 4, 5] });
    const long = sharedTimeAxis({ ...empty, lua: [sample("lua", 61)] });
    expect(long.domain).toEqual([0, 75]);
    expect(long.ticks.length).toBeLessThanOrEqual(7);
  });

  it("shows each strategy's newest badges, in the strategies' order, empty before it starts", () => {
    const rows = latestBadges(
      { naive: [sample("naive", 0.25), sample("naive", 0.5)], lock: [], watch: [], lua: [sample("lua", 1)] },
      ["lua", "naive", "lock"],
    );
    expect(rows).toEqual([
      { strategy: "naive", badges: [{ userId: 1, badge: 3, sum: 2 }] },
      { strategy: "lock", badges: [] },
      { strategy: "lua", badges: [{ userId: 1, badge: 3, sum: 3 }] },
    ]);
  });
});
