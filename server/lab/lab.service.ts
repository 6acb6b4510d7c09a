import type { RedisClient } from "../redis/client.ts";
import type {
  BotsStatus,
  LabRunEnd,
  LabRunInfo,
  LabRunResult,
  LabSample,
  LabStatus,
  LabStory,
  LabStoryScenario,
  LabStrategyName,
  LabWorkload,
} from "../contracts/lab.ts";
import { AppError, RETRY_WHEN_FREED_MS } from "../errors.ts";
import type { Logger } from "../log.ts";
import { IDLE_BOTS, startBots, type Bots, type BotsOptions } from "./bots.ts";
import { openLabRedis } from "./lab-redis.ts";
import { describeRun, newRunId, runLab } from "./lab.ts";
import { replayStories } from "./story.ts";

/** A run stops by itself after this long; the results so far are reported. */
export const MAX_RUN_MS = 10 * 60_000;

const SHUTTING_DOWN: LabRunEnd = { reason: "stopped", by: "the server (shutting down)" };

/** How an aborted run ended: whoever aborts it gives its AbortController the reason, a LabRunEnd. */
function endOf(signal: AbortSignal): LabRunEnd {
  if (!signal.aborted) return { reason: "completed" };
  const reason = signal.reason as Partial<LabRunEnd> | undefined;
  return reason?.reason === "stopped" || reason?.reason === "timeLimit" ? (reason as LabRunEnd) : SHUTTING_DOWN;
}

export interface RunListener {
  sampled(sample: LabSample): void;
  finished(result: LabRunResult): void;
  failed(runId: string, message: string): void;
}

export interface LabServiceDeps {
  /** The app's Redis: used only when redis-server is missing, and then only under the run's key prefix. */
  sharedRedis: RedisClient;
  log: Logger;
}

export type LabService = ReturnType<typeof createLabService>;

/**
 * One lab run at a time per instance (a run loads both cores), on a redis-server of its own; stories replay
 * on one too. Also runs the demo bots, one set per user. A run and a user's bots belong to the user who
 * started them: only they can stop them.
 */
export function createLabService({ sharedRedis, log }: LabServiceDeps) {
  let current: {
    info: LabRunInfo;
    ownerId: number;
    abort: AbortController;
    done: Promise<void>;
    /**
     * The run's samples so far, for a page that connects mid-run (its owner's, or one that watches it): one every
     * ~250 ms, so MAX_RUN_MS bounds them (≈ 2400, a few hundred kB); the page thins them to its own 600 a line.
     */
    samples: LabSample[];
  } | null = null;
  let replaying: Promise<unknown> = Promise.resolve();
  const botsByOwner = new Map<number, Bots>();

  async function start(
    ownerId: number,
    strategies: LabStrategyName[],
    workload: LabWorkload,
    listener: RunListener,
  ): Promise<LabRunInfo> {
    if (current)
      throw new AppError(
        "rate_limited",
        current.ownerId === ownerId
          ? "Your lab run is still going; stop it or wait for it to end."
          : "Someone else's lab run is going on this server (one at a time); try again when it ends.",
        RETRY_WHEN_FREED_MS,
      );
    const abort = new AbortController();
    const runId = newRunId();
    const slot = {
      info: null as unknown as LabRunInfo,
      ownerId,
      abort,
      done: Promise.resolve(),
      samples: [] as LabSample[],
    };
    const sampled = (sample: LabSample) => {
      slot.samples.push(sample);
      listener.sampled(sample);
    };
    current = slot;
    let labRedis;
    try {
      labRedis = await openLabRedis({ shared: sharedRedis });
    } catch (err) {
      current = null;
      log.error({ err }, "lab: could not open a Redis for the run");
      throw new AppError("unavailable", "The lab could not start a Redis for the run.");
    }
    const info = describeRun(runId, strategies, workload, labRedis);
    slot.info = info;
    const lab = labRedis;
    // A forgotten run (a million operations with long delays) must not load the server forever.
    const cap = setTimeout(
      () => abort.abort({ reason: "timeLimit", limitMinutes: MAX_RUN_MS / 60_000 } satisfies LabRunEnd),
      MAX_RUN_MS,
    );
    cap.unref();
    // The run's Redis is closed and the slot freed before anyone hears the outcome: "finished" means idle again.
    slot.done = (async () => {
      let report: () => void;
      try {
        const result = await runLab({ run: info, labRedis: lab, signal: abort.signal, onSample: sampled });
        // A Stop that came after the last operation stopped nothing.
        const cutShort =
          result.results.length < info.strategies.length ||
          result.results.some((r) => r.completed + r.lost < r.operations);
        const end = cutShort ? endOf(abort.signal) : { reason: "completed" as const };
        report = () => listener.finished({ ...result, end });
      } catch (err) {
        log.error({ err, runId }, "lab run failed");
        report = () => listener.failed(runId, err instanceof Error ? err.message : "the run failed");
      }
      await lab.close().catch((err: unknown) => log.warn({ err }, "lab: closing the run's Redis failed"));
      clearTimeout(cap);
      if (current === slot) current = null;
      report();
    })();
    return info;
  }

  /** `user` stops the run `runId`; its result names them. */
  async function stop(user: { id: number; name: string }, runId: string): Promise<void> {
    if (!current || current.info.runId !== runId) throw new AppError("not_found", "No such lab run is in progress.");
    if (current.ownerId !== user.id)
      throw new AppError("forbidden", "Only the person who started this run can stop it.");
    current.abort.abort({ reason: "stopped", by: user.name } satisfies LabRunEnd);
    await current.done;
  }

  function replay(scenario: LabStoryScenario): Promise<LabStory[]> {
    // One at a time: each replay starts a redis-server of its own.
    const next = replaying
      .catch(() => undefined)
      .then(async () => {
        const labRedis = await openLabRedis({ shared: sharedRedis });
        try {
          return await replayStories(scenario, labRedis);
        } finally {
          await labRedis.close();
        }
      });
    replaying = next;
    return next;
  }

  /** Starts `ownerId`'s bots (replacing theirs, never anyone else's). */
  async function startBotsFor(ownerId: number, opts: BotsOptions): Promise<BotsStatus> {
    await stopBots(ownerId);
    const bots = await startBots(opts);
    botsByOwner.set(ownerId, bots);
    return bots.status();
  }

  async function stopBots(ownerId: number): Promise<BotsStatus> {
    const running = botsByOwner.get(ownerId);
    botsByOwner.delete(ownerId);
    if (running) await running.stop();
    return running?.status() ?? IDLE_BOTS;
  }

  return {
    start,
    stop,
    replay,
    startBots: startBotsFor,
    stopBots,
    /**
     * The asking user's run in progress and its samples so far; whether another user's holds the slot, and that run
     * to watch once it has started (its Redis open); their bots.
     */
    status(userId: number): LabStatus {
      const mine = current !== null && current.ownerId === userId && current.info !== null;
      const others = current !== null && current.ownerId !== userId ? current : null;
      return {
        run: mine ? current!.info : null,
        samples: mine ? [...current!.samples] : [],
        othersRun: others !== null,
        watch: others?.info != null ? { run: others.info, samples: [...others.samples] } : null,
        bots: botsByOwner.get(userId)?.status() ?? IDLE_BOTS,
      };
    },
    async close() {
      current?.abort.abort(SHUTTING_DOWN);
      await current?.done;
      await Promise.all([...botsByOwner.keys()].map((ownerId) => stopBots(ownerId)));
    },
  };
}
