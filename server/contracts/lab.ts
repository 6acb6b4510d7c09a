/**
 * The consistency lab's contract (the `/lab` Socket.IO namespace), shared by the server and the /lab page.
 * Types only. docs/benchmarks.md describes what the numbers mean; docs/protocol.md lists the events.
 */
import type { Ack, SessionEnded } from "./common.ts";

/** The four ways to keep a conversation's unread and the total together (server/lab/strategies). */
export type LabStrategyName = "naive" | "lock" | "watch" | "lua";

export interface LabFaults {
  /** Probability that an attempt fails right after its first write (for WATCH and Lua: before the one write). */
  stepFailureRate: number;
  /** Delay injected between the two steps of an operation, for `stepDelayRate` of the operations. */
  stepDelayMs: number;
  stepDelayRate: number;
  /** Probability that the worker dies after the first step, holding the lock (if any) without releasing it. */
  workerDeathRate: number;
  /** Restart the lab's own redis-server (empty) once, halfway through each strategy's operations. */
  redisRestart: boolean;
}

export interface LabWorkload {
  /** The same seed replays the same operations. */
  seed: number;
  users: number;
  conversationsPerUser: number;
  /** Concurrent workers, each with its own Redis connection. */
  workers: number;
  /** Operations per strategy. */
  operations: number;
  /** Share of sends; the rest are reads. */
  sendShare: number;
  /** Share of operations aimed at user 1 (a busy group member); the rest are spread evenly. */
  hotUserShare: number;
  faults: LabFaults;
  lock: { ttlMs: number; watchdog: boolean; maxAttempts: number };
  watch: { maxRetries: number };
}

/** A workload field left out takes its default (server/lab/params.ts). */
export interface LabRunInput {
  strategies: LabStrategyName[];
  workload?: Partial<Omit<LabWorkload, "faults" | "lock" | "watch">> & {
    faults?: Partial<LabFaults>;
    lock?: Partial<LabWorkload["lock"]>;
    watch?: Partial<LabWorkload["watch"]>;
  };
}

export interface LabRunInfo {
  runId: string;
  strategies: LabStrategyName[];
  workload: LabWorkload;
  /**
   * "private": a redis-server started for this run; "shared": the app's Redis under the run's key prefix;
   * "cluster": a Redis Cluster the lab was given (not offered by the web lab), under the run's key prefix.
   */
  redis: "private" | "shared" | "cluster";
  /** Things the presenter should know (a fault that was switched off, and why). */
  notices: string[];
}

export interface LabDrift {
  /** Users whose total differs from the sum of their conversation counts. */
  users: number;
  /** Sum over users of |total − sum|. */
  amount: number;
}

/** One user's badge next to the sum of their conversations, as a strategy stores them at a moment. */
export interface LabBadge {
  userId: number;
  /** The stored total: what the app icon would show. */
  badge: number;
  /** The sum of the user's conversation counts: what the list adds up to. */
  sum: number;
}

/** One point of the live charts, about every 250 ms while a strategy runs. */
export interface LabSample {
  runId: string;
  strategy: LabStrategyName;
  /** Seconds since this strategy started. */
  t: number;
  opsPerSec: number;
  completed: number;
  /** Observed at that moment, operations in flight included (up to 100 users are sampled). */
  drift: LabDrift;
  /** The hot user (1) and the next user or two, for the live badge view. */
  badges: LabBadge[];
}

export interface LabStrategyResult {
  strategy: LabStrategyName;
  operations: number;
  completed: number;
  seconds: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** WATCH: transactions retried after a conflict. */
  retries: number;
  /** Lock: acquisitions that found the lock taken and waited. */
  lockWaits: number;
  /** Attempts that failed (injected faults, a worker that died, lock or retry bound reached, Redis down)… */
  aborted: number;
  /** …and operations that still failed after every redelivery. */
  lost: number;
  /** After the run, every operation finished. */
  drift: LabDrift;
  /** Conversation counts and totals that differ from what the workload generator knows is true. */
  wrong: { counts: number; totals: number };
}

/**
 * How a run ended: it ran every strategy's operations, someone pressed Stop (`by`: their name), or it reached the
 * server's time limit (`limitMinutes`). A run that did not complete reports the operations done until then.
 */
export type LabRunEnd =
  { reason: "completed" } | { reason: "stopped"; by: string } | { reason: "timeLimit"; limitMinutes: number };

export interface LabRunResult {
  runId: string;
  results: LabStrategyResult[];
  notices: string[];
  end: LabRunEnd;
}

export type LabStoryScenario = "race" | "crash" | "mute";

export interface LabStoryStep {
  actor: "sender" | "reader" | "worker" | "user" | "redis";
  /** What happened, with the Redis commands involved. */
  action: string;
  /** The conversation's count and the user's total after this step. */
  list: number;
  badge: number;
  /** The conversation is muted: its count stays in the list, but only its mentions (none here) reach the badge. */
  muted: boolean;
}

export interface LabStory {
  strategy: LabStrategyName;
  scenario: LabStoryScenario;
  steps: LabStoryStep[];
  /** What the user should see: messages after their read cursor. */
  truth: number;
  /** What the badge should show: `truth`, or 0 once the conversation is muted (the lab sends no mentions). */
  truthBadge: number;
  verdict: "correct" | "drift" | "wrong";
  summary: string;
}

export interface BotsStatus {
  running: boolean;
  /** Messages per second across all bots. */
  rate: number;
  users: string[];
  sent: number;
  reads: number;
  errors: number;
}

export interface BotsInput {
  rate: number;
  /** How many bot accounts chat with the user who starts them (1–5, default 3). */
  count?: number;
}

/** Someone else's run on this instance, as the pages that watch it see it: its settings and samples so far (not whose). */
export interface LabWatch {
  run: LabRunInfo;
  samples: LabSample[];
}

/**
 * What the pages watching someone else's run hear of it: its samples, its end (a Stop's `by` is "its owner", not
 * a name), its failure (not why: the reason can name the server's own Redis).
 */
export type LabWatched =
  | { kind: "sampled"; sample: LabSample }
  | { kind: "finished"; result: LabRunResult }
  | { kind: "failed"; runId: string };

/**
 * `lab:status`: the asking user's run in progress on this instance, if any, with its samples so far (a page that
 * reloads or opens in a second tab draws the run from its start), whether someone else's run holds the instance's
 * one slot (`watch`: that run, which every lab page on the instance can follow, a workshop's attendees the
 * presenter's, without learning whose it is), and the user's bots.
 */
export interface LabStatus {
  run: LabRunInfo | null;
  samples: LabSample[];
  othersRun: boolean;
  watch: LabWatch | null;
  bots: BotsStatus;
}

export interface LabClientToServerEvents {
  "lab:start": (input: LabRunInput, ack: Ack<{ run: LabRunInfo }>) => void;
  "lab:stop": (input: { runId: string }, ack: Ack<object>) => void;
  "lab:status": (ack: Ack<LabStatus>) => void;
  "lab:replay": (input: { scenario: LabStoryScenario }, ack: Ack<{ stories: LabStory[] }>) => void;
  "bots:start": (input: BotsInput, ack: Ack<{ bots: BotsStatus }>) => void;
  "bots:stop": (ack: Ack<{ bots: BotsStatus }>) => void;
}

/** Between instances, on the /lab namespace: a user's bots run on the instance that started them. */
export interface LabInterServerEvents {
  /** Stop this user's bots if they run here; answers what they did (IDLE when none ran here). */
  "bots:stop": (ownerId: number, ack: (status: BotsStatus) => void) => void;
  /** This user's bots here, if any. */
  "bots:status": (ownerId: number, ack: (status: BotsStatus) => void) => void;
}

export interface LabServerToClientEvents {
  "lab:sampled": (sample: LabSample) => void;
  "lab:finished": (result: LabRunResult) => void;
  "lab:failed": (payload: { runId: string; message: string }) => void;
  /** To every other lab page on the run's instance: someone else's run, which they watch. */
  "lab:watched": (event: LabWatched) => void;
  /** To every lab page on the instance: its run slot was taken or freed; a page asks `lab:status` again. */
  "lab:slot": (slot: { busy: boolean }) => void;
  "bots:changed": (bots: BotsStatus) => void;
  /** As in the chat's namespace: this socket's session ended, and why; the socket is disconnected right after. */
  "session:ended": (payload: SessionEnded) => void;
}
