import { createStore } from "zustand/vanilla";
import type {
  BotsInput,
  BotsStatus,
  LabBadge,
  LabFaults,
  LabRunInfo,
  LabRunInput,
  LabRunResult,
  LabSample,
  LabStatus,
  LabStory,
  LabStoryScenario,
  SessionEndReason,
  LabStrategyName,
  LabWatched,
  LabWorkload,
  Result,
} from "@/server/contracts";
import { DEFAULT_WORKLOAD, STRATEGIES } from "@/server/contracts/lab-defaults";
import { knownEndReason } from "@/components/lib/session-ended";

/** What the lab page needs from the server; the provider implements it over the `/lab` socket. */
export interface LabTransport {
  start(input: LabRunInput): Promise<Result<{ run: LabRunInfo }>>;
  stop(runId: string): Promise<Result>;
  status(): Promise<Result<LabStatus>>;
  replay(scenario: LabStoryScenario): Promise<Result<{ stories: LabStory[] }>>;
  startBots(input: BotsInput): Promise<Result<{ bots: BotsStatus }>>;
  stopBots(): Promise<Result<{ bots: BotsStatus }>>;
}

export const STRATEGY_NAMES = STRATEGIES;

/** The form's fields; the server fills in everything else with its defaults. */
export type LabForm = Omit<LabWorkload, "lock" | "watch">;

const { lock: _lock, watch: _watch, ...formDefaults } = DEFAULT_WORKLOAD;
export const DEFAULT_FORM: LabForm = formDefaults;

/**
 * `stopped`: the run ended before its last operation (Stop, or the server's time limit); `result.end` says why.
 * `watching`: someone else's run is going on this server, and the page follows it; it ends as `finished`,
 * `stopped` or `failed` as the page's own would (`watching` stays true: the run shown is not the page's).
 */
export type RunStatus = "idle" | "starting" | "running" | "watching" | "finished" | "stopped" | "failed";

export interface LabState {
  /** `disabled`: this server runs without the lab (LAB=0). */
  connection: "connecting" | "connected" | "signedOut" | "offline" | "disabled";
  /**
   * The server ended this page's session while it was connected (`session:ended`), and why (null: a reason this
   * client does not know); null when it did not (a visit without a session).
   */
  ended: { reason: SessionEndReason | null } | null;
  form: LabForm;
  strategies: LabStrategyName[];
  status: RunStatus;
  run: LabRunInfo | null;
  samples: Record<LabStrategyName, LabSample[]>;
  result: LabRunResult | null;
  /** This page asked the server to stop the run in progress. */
  stopAsked: boolean;
  /** Another user's run holds the server's one run slot: Run waits for it to end. */
  othersRun: boolean;
  /** The run shown is someone else's, followed live (or its end). */
  watching: boolean;
  /**
   * Someone else's run the page could watch, offered instead of taken up because the page shows its own run's
   * results or failure, which the server does not keep (the run's id).
   */
  offer: string | null;
  /** The form or the strategies were changed since this page last ran, or took up, a run's settings. */
  edited: boolean;
  /**
   * This page's own edits, put aside while the form shows the settings of a run started elsewhere (another tab of
   * the same person): they come back when that run ends, instead of being lost to it.
   */
  draft: { form: LabForm; strategies: LabStrategyName[] } | null;
  error: string | null;
  story: {
    scenario: LabStoryScenario | null;
    stories: LabStory[];
    step: number;
    loading: boolean;
    error: string | null;
  };
  bots: BotsStatus;
  botsRate: number;
  botsError: string | null;

  setForm(patch: Partial<Omit<LabForm, "faults">>): void;
  setFaults(patch: Partial<LabFaults>): void;
  toggleStrategy(name: LabStrategyName): void;
  start(): Promise<void>;
  stop(): Promise<void>;
  receiveSample(sample: LabSample): void;
  receiveFinished(result: LabRunResult): void;
  receiveFailed(runId: string, message: string): void;
  /** What a watching page hears of someone else's run; ignored unless it is the run the page watches. */
  receiveWatched(event: LabWatched): void;
  /** Takes up the run offered (`offer`): asks the server for it and its samples so far. */
  watchOffered(): Promise<void>;
  /**
   * What the server is doing now (asked when the socket connects and when the run slot changes): this user's run in
   * progress is shown with its samples so far and its settings, another user's keeps Run waiting.
   */
  receiveStatus(status: LabStatus): void;
  /** Once signed out, a disconnect changes nothing: the socket is not coming back. */
  setConnection(connection: LabState["connection"]): void;
  /** `session:ended`: signed out, with the reason as received (checked here); the disconnect follows. */
  receiveSessionEnded(reason: unknown): void;
  loadStory(scenario: LabStoryScenario): Promise<void>;
  /** Moves the story's cursor; every strategy's timeline shows the steps up to it. */
  stepStory(delta: number): void;
  setBotsRate(rate: number): void;
  receiveBots(bots: BotsStatus): void;
  startBots(): Promise<void>;
  stopBots(): Promise<void>;
}

/** The page's own edits back in the form once the run that had put them aside has ended (none: nothing changes). */
function restored({ draft }: Pick<LabState, "draft">): Partial<LabState> {
  return draft ? { form: draft.form, strategies: draft.strategies, edited: true, draft: null } : {};
}

const emptySamples = (): Record<LabStrategyName, LabSample[]> => ({ naive: [], lock: [], watch: [], lua: [] });

/**
 * A run's samples so far, by strategy, at most MAX_SAMPLES a line: thinned as receiveSample thins a line (every
 * other point, the newest kept), so that a long line still starts where the run did.
 */
function samplesOf(samples: readonly LabSample[]): Record<LabStrategyName, LabSample[]> {
  const lines = emptySamples();
  for (const sample of samples) lines[sample.strategy]?.push(sample);
  for (const name of STRATEGY_NAMES) {
    while (lines[name].length > MAX_SAMPLES)
      lines[name] = lines[name].filter((_, i, line) => i % 2 === 0 || i === line.length - 1);
  }
  return lines;
}

/** What a page that was away says when its run ended meanwhile: it missed the results, which are not kept. */
export const RUN_ENDED_AWAY =
  "Your run ended while this page was not connected; its results were shown in the pages that stayed connected.";
/** What a page that watched someone else's run says when it failed (why is its owner's to know). */
export const WATCHED_FAILED = "The run you were watching failed.";
/** What a Stop that got no answer says: the run may well go on, on the server. */
export const STOP_UNANSWERED = "No answer from the server to Stop; the run may still be going.";
const IDLE: BotsStatus = { running: false, rate: 0, users: [], sent: 0, reads: 0, errors: 0 };
/** Enough points for a long run; older ones are thinned out. */
const MAX_SAMPLES = 600;

export function createLabStore(transport: LabTransport) {
  return createStore<LabState>()((set, get) => {
    /** The run the person asked to watch (Watch), taken up by the next status answer that has it. */
    let consented: string | null = null;

    function appendSample(sample: LabSample): void {
      set((s) => {
        const list = s.samples[sample.strategy];
        const next = list.length >= MAX_SAMPLES ? [...list.filter((_, i) => i % 2 === 0), sample] : [...list, sample];
        return { samples: { ...s.samples, [sample.strategy]: next } };
      });
    }

    async function askStatus(): Promise<void> {
      const res = await transport.status().catch(() => null);
      if (res?.ok) get().receiveStatus(res);
    }

    return {
      connection: "connecting",
      ended: null,
      form: DEFAULT_FORM,
      strategies: [...STRATEGY_NAMES],
      status: "idle",
      run: null,
      samples: emptySamples(),
      result: null,
      stopAsked: false,
      othersRun: false,
      watching: false,
      offer: null,
      edited: false,
      draft: null,
      error: null,
      story: { scenario: null, stories: [], step: 0, loading: false, error: null },
      bots: IDLE,
      botsRate: 2,
      botsError: null,

      setForm: (patch) => set((s) => ({ form: { ...s.form, ...patch }, edited: true })),
      setFaults: (patch) => set((s) => ({ form: { ...s.form, faults: { ...s.form.faults, ...patch } }, edited: true })),
      toggleStrategy: (name) =>
        set((s) => ({
          edited: true,
          strategies: s.strategies.includes(name)
            ? s.strategies.filter((n) => n !== name)
            : STRATEGY_NAMES.filter((n) => n === name || s.strategies.includes(n)),
        })),

      async start() {
        const { form, strategies, status } = get();
        if (status === "starting" || status === "running") return;
        set({
          status: "starting",
          error: null,
          result: null,
          stopAsked: false,
          samples: emptySamples(),
          run: null,
          watching: false,
          offer: null,
          edited: false,
        });
        const res = await transport.start({ strategies, workload: form }).catch(() => null);
        if (!res) return set({ status: "failed", error: "No answer from the server." });
        if (!res.ok) {
          set({ status: "failed", error: res.error.message });
          // Refused because someone else's run took the slot first: the page can watch that one instead.
          if (res.error.code === "rate_limited") await askStatus();
          return;
        }
        // The run may already have finished (a tiny one) before its acknowledgement arrived.
        if (get().result?.runId === res.run.runId) return set({ run: res.run });
        set({ status: "running", run: res.run });
      },

      async stop() {
        const run = get().run;
        if (!run || get().status !== "running") return;
        set({ stopAsked: true, error: null });
        const res = await transport.stop(run.runId).catch(() => null);
        // The run ended meanwhile (its end arrived before the answer, or instead of it): nothing left to say.
        if (get().run?.runId !== run.runId || get().status !== "running") return;
        // No answer (offline, or the server too busy to answer): said, and Stop can be pressed again.
        if (!res) set({ error: STOP_UNANSWERED, stopAsked: false });
        else if (!res.ok) set({ error: res.error.message, stopAsked: false });
      },

      receiveSample(sample) {
        const { run, status } = get();
        // The user's own runs only (watched ones come as receiveWatched): not before the page's start is answered,
        // not another than the one shown. With none shown, a run of theirs on another instance is drawn.
        if (status === "starting" && !run) return;
        if (run && sample.runId !== run.runId) return;
        appendSample(sample);
      },

      receiveFinished(result) {
        const run = get().run;
        if (run && run.runId !== result.runId) return;
        // A Stop whose answer was lost did reach the server after all: "the run may still be going" no longer holds.
        const error = get().error === STOP_UNANSWERED ? null : get().error;
        set({ status: result.end.reason === "completed" ? "finished" : "stopped", result, error, ...restored(get()) });
      },

      receiveFailed(runId, message) {
        const run = get().run;
        if (run && run.runId !== runId) return;
        set({ status: "failed", error: message, ...restored(get()) });
      },

      receiveWatched(event) {
        const { run, status, watching } = get();
        const runId =
          event.kind === "sampled" ? event.sample.runId : event.kind === "finished" ? event.result.runId : event.runId;
        if (!watching || status !== "watching" || run?.runId !== runId) return;
        if (event.kind === "sampled") return appendSample(event.sample);
        if (event.kind === "finished") {
          return set({
            status: event.result.end.reason === "completed" ? "finished" : "stopped",
            result: event.result,
          });
        }
        set({ status: "failed", error: WATCHED_FAILED });
      },

      async watchOffered() {
        if (get().offer === null) return;
        consented = get().offer;
        await askStatus();
      },

      receiveStatus({ run, samples, othersRun, watch, bots }) {
        set({ bots, othersRun });
        const shown = get();
        if (shown.status === "running" && shown.run && run?.runId !== shown.run.runId) {
          // The run this page shows is over, and it missed the end (offline when it came): it is not stuck on it.
          set({ status: "idle", stopAsked: false, error: RUN_ENDED_AWAY, ...restored(get()) });
        }
        if (shown.status === "watching" && shown.run?.runId !== watch?.run.runId) {
          // The run it watched ended while the page was away: its end is not kept, so its half line is not either.
          set({ status: "idle", watching: false, run: null, samples: emptySamples() });
        }
        if (get().offer !== null && get().offer !== watch?.run.runId) set({ offer: null });
        if (run && get().status === "running" && get().run?.runId === run.runId) {
          // Back after a disconnect: the server's samples are the whole line so far, the ones missed meanwhile too.
          set({ samples: samplesOf(samples ?? []) });
          return;
        }
        // A run this page already saw finish is not taken up again (an answer whose content is older than the finish).
        if (run && run.runId !== get().result?.runId) {
          const { lock: _l, watch: _w, ...form } = run.workload;
          const page = get();
          set({
            run,
            status: "running",
            watching: false,
            offer: null,
            samples: samplesOf(samples ?? []),
            form,
            strategies: STRATEGY_NAMES.filter((n) => run.strategies.includes(n)),
            draft: page.draft ?? (page.edited ? { form: page.form, strategies: page.strategies } : null),
            edited: false,
            result: null,
            stopAsked: false,
            error: null,
          });
          return;
        }
        // Someone else's run holds the slot: the page follows it, its own form left as it is. Not while its own start
        // waits for an answer (a refused start asks again); not over the results or failure of the page's own run,
        // which the server does not keep: there it is offered (Watch), and taken up once the person asks.
        if (!watch || get().status === "starting") return;
        const page = get();
        if (page.status === "watching" && page.run?.runId === watch.run.runId) {
          // Back after a disconnect, still watching: the server's samples are the whole line so far.
          set({ samples: samplesOf(watch.samples) });
          return;
        }
        // A run this page already saw end is not taken up again (an answer whose content is older than the end).
        if (watch.run.runId === page.result?.runId || (page.watching && page.run?.runId === watch.run.runId)) return;
        const free = (page.status === "idle" && page.error === null) || page.watching || consented === watch.run.runId;
        if (!free) return set({ offer: watch.run.runId });
        consented = null;
        set({
          run: watch.run,
          status: "watching",
          watching: true,
          offer: null,
          samples: samplesOf(watch.samples),
          result: null,
          stopAsked: false,
          error: null,
        });
      },

      setConnection: (connection) => {
        if (connection === "offline" && get().connection === "signedOut") return;
        set({ connection });
      },

      receiveSessionEnded: (reason) => set({ connection: "signedOut", ended: { reason: knownEndReason(reason) } }),

      async loadStory(scenario) {
        set({ story: { scenario, stories: [], step: 0, loading: true, error: null } });
        const res = await transport.replay(scenario).catch(() => null);
        if (get().story.scenario !== scenario) return;
        if (!res || !res.ok) {
          const error = res && !res.ok ? res.error.message : "No answer from the server.";
          return set({ story: { scenario, stories: [], step: 0, loading: false, error } });
        }
        set({ story: { scenario, stories: res.stories, step: 1, loading: false, error: null } });
      },

      stepStory(delta) {
        set((s) => {
          const longest = Math.max(0, ...s.story.stories.map((st) => st.steps.length));
          const step = Math.min(longest, Math.max(1, s.story.step + delta));
          return { story: { ...s.story, step } };
        });
      },

      setBotsRate: (botsRate) => set({ botsRate }),
      receiveBots: (bots) => set({ bots }),

      async startBots() {
        set({ botsError: null });
        const res = await transport.startBots({ rate: get().botsRate }).catch(() => null);
        if (!res) return set({ botsError: "No answer from the server." });
        if (!res.ok) return set({ botsError: res.error.message });
        set({ bots: res.bots });
      },

      async stopBots() {
        const res = await transport.stopBots().catch(() => null);
        if (res?.ok) set({ bots: res.bots, botsError: null });
      },
    };
  });
}

export type LabStore = ReturnType<typeof createLabStore>;

/** How far from a quarter second a sample may be and still be drawn on it (live samples come every 250 ms). */
const SNAP_S = 0.03;

/**
 * Time-aligned rows for a chart: one row per sample time, a column per strategy. A live sample is drawn on the
 * quarter second it was taken for, so the strategies share rows (one tooltip); other times keep their own value,
 * so a strategy's line ends when it did (its end-of-run sample). A sample never lands on its predecessor's row or
 * before it: a strategy that ends within a few ms of its start or of its last live sample would overwrite that
 * point and draw no line to its end-of-run value.
 */
export function chartRows(
  samples: Record<LabStrategyName, LabSample[]>,
  value: (s: LabSample) => number,
): Array<{ t: number } & Partial<Record<LabStrategyName, number>>> {
  const rows = new Map<number, { t: number } & Partial<Record<LabStrategyName, number>>>();
  for (const name of STRATEGY_NAMES) {
    let previous = -Infinity;
    for (const s of samples[name]) {
      const quarter = Math.round(s.t * 4) / 4;
      const aligned = Math.abs(s.t - quarter) <= SNAP_S ? quarter : s.t;
      const t = aligned > previous ? aligned : Math.max(s.t, previous);
      previous = t;
      const row = rows.get(t) ?? { t };
      row[name] = value(s);
      rows.set(t, row);
    }
  }
  return [...rows.values()].sort((a, b) => a.t - b.t);
}

/** Each strategy's badges in its newest sample (none before it starts), in the order of `strategies`. */
export function latestBadges(
  samples: Record<LabStrategyName, LabSample[]>,
  strategies: readonly LabStrategyName[],
): Array<{ strategy: LabStrategyName; badges: LabBadge[] }> {
  return STRATEGY_NAMES.filter((name) => strategies.includes(name)).map((strategy) => ({
    strategy,
    badges: samples[strategy].at(-1)?.badges ?? [],
  }));
}

const TIME_STEPS = [0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600];

/**
 * One time axis for every chart and strategy: from 0 to the longest strategy's last sample, rounded up to a
 * whole tick, with at most 6 ticks, so lines of strategies that ran for different times compare by eye.
 */
export function sharedTimeAxis(samples: Record<LabStrategyName, LabSample[]>): {
  domain: [number, number];
  ticks: number[];
} {
  let longest = 0;
  for (const name of STRATEGY_NAMES) longest = Math.max(longest, samples[name].at(-1)?.t ?? 0);
  const step = TIME_STEPS.find((s) => longest / s <= 6) ?? Math.ceil(longest / 6 / 600) * 600;
  const end = Math.max(step, Math.ceil(longest / step) * step);
  const ticks = Array.from({ length: Math.round(end / step) + 1 }, (_, i) => Math.round(i * step * 100) / 100);
  return { domain: [0, end], ticks };
}
