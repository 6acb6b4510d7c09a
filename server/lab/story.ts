import type { RedisClient } from "../redis/client.ts";
import type { LabStory, LabStoryScenario, LabStoryStep, LabStrategyName } from "../contracts/lab.ts";
import { STORY_LOCK_TTL_MS } from "../contracts/lab-defaults.ts";
import { labPrefix } from "../redis/keys.ts";
import type { LabRedis } from "./lab-redis.ts";
import { newRunId } from "./lab.ts";
import { STRATEGIES } from "./params.ts";
import { createStrategy } from "./strategies/index.ts";
import { WorkerDied, type OpHooks, type OpStats, type Strategy } from "./strategies/types.ts";
import { Truth, type LabOp } from "./workload.ts";

const USER = 1;
const CONVERSATION = 7;

const SUMMARIES: Record<LabStoryScenario, Record<LabStrategyName, string>> = {
  race: {
    naive:
      "Two separate writes with nothing between them: the reader cleared the conversation and the total while " +
      "the send was between its writes, then the send's delayed +1 landed on the total alone.",
    lock:
      "The reader waited for the lock, so nothing interleaved and total = sum. But clearing to zero also " +
      "cleared message 3, which the reader never saw: consistent, and still wrong.",
    watch:
      "The reader's transaction committed first; the send's EXEC found a watched key changed, answered nil, " +
      "and the send started over on fresh values.",
    lua:
      "One atomic script per event on max-registers: the read (up to 2) and the send (3) end in the same state " +
      "whichever lands first.",
  },
  crash: {
    naive:
      "The first write stuck and the second never happened; the redelivery added to the conversation again: " +
      "the badge and the list disagree for good.",
    lock:
      `The dead worker's lease ran out after ${STORY_LOCK_TTL_MS} ms and the redelivery got the lock, but a lock ` +
      "does not make two writes atomic: the conversation counted the message twice, the total once.",
    watch: "The worker died before EXEC, so nothing was written; the redelivery applied both writes together.",
    lua: "The worker died before its one script call, so nothing was written; the redelivery applied the message once.",
  },
  mute: {
    naive:
      "The send saw the conversation unmuted and was delayed before touching the total; the mute took the whole " +
      "count, message 3 included, out of a total that did not have it yet (clamped at 0), then the send's +1 " +
      "landed: the badge counts a muted conversation with no mention.",
    lock:
      "The mute waited for the lock, so it read the count with message 3 in it and took all of it out: right " +
      "here. The lock only serialises; a crash between its two writes would still leave the badge behind.",
    watch:
      "The mute committed first; the send's EXEC found a watched key changed, started over, saw the mute and " +
      "left the total alone.",
    lua:
      "The mute is a register (version 1) merged by the same script that keeps the counts and the total: " +
      "whichever lands first, the conversation keeps its 3 and the badge leaves them out.",
  },
};

interface Cast {
  strategy: Strategy;
  truth: Truth;
  steps: LabStoryStep[];
  monitor: RedisClient;
  record(actor: LabStoryStep["actor"], action: string): Promise<void>;
  /** A step that changed nothing in Redis (a pause, a wait): shows the last state again. */
  note(actor: LabStoryStep["actor"], action: string): void;
}

/** Where each strategy can be interrupted: the same point the workload's faults use. */
function gapOf(name: LabStrategyName): string {
  if (name === "lua") return "before its one script call";
  if (name === "watch") return "between its reads and EXEC";
  return "between its two writes";
}

const stats = (): OpStats => ({ retries: 0, lockWaits: 0 });
const quiet: OpHooks = { gap: async () => undefined };

/** The story user's next operation on the story's conversation, the truth moved on by it. */
function nextOp(truth: Truth, index: number, kind: LabOp["kind"]): LabOp {
  if (kind === "mute") {
    truth.mute(USER, CONVERSATION);
    return { index, kind, userId: USER, conversationId: CONVERSATION, seq: 0 };
  }
  const seq = kind === "send" ? truth.send(USER, CONVERSATION) : truth.read(USER, CONVERSATION);
  return { index, kind, userId: USER, conversationId: CONVERSATION, seq };
}

/**
 * Replays one classic interleaving against one strategy on real Redis, step by step: the strategy's own code
 * runs, and the story decides when each actor pauses. Each step records the conversation's count (the list)
 * and the user's total (the badge) right after it.
 */
export async function replayStory(
  scenario: LabStoryScenario,
  name: LabStrategyName,
  labRedis: LabRedis,
): Promise<LabStory> {
  const prefix = labPrefix(`story${newRunId()}`, name);
  const truth = new Truth(1, CONVERSATION);
  const strategy = createStrategy(name, {
    prefix,
    truth,
    lock: { ttlMs: STORY_LOCK_TTL_MS, watchdog: true, maxAttempts: 10_000 },
    watch: { maxRetries: 10 },
  });
  const monitor = await labRedis.connect();
  const conns: RedisClient[] = [monitor];
  const connect = async () => {
    const conn = await labRedis.connect();
    conns.push(conn);
    return conn;
  };
  const steps: LabStoryStep[] = [];
  const cast: Cast = {
    strategy,
    truth,
    steps,
    monitor,
    async record(actor, action) {
      const [state] = await strategy.read(monitor, [USER]);
      steps.push({
        actor,
        action,
        list: state?.counts.get(CONVERSATION) ?? 0,
        badge: state?.total ?? 0,
        muted: state?.muted.has(CONVERSATION) ?? false,
      });
    },
    note(actor, action) {
      const last = steps.at(-1);
      steps.push({ actor, action, list: last?.list ?? 0, badge: last?.badge ?? 0, muted: last?.muted ?? false });
    },
  };
  try {
    await strategy.prepare(monitor, [USER]);
    const setup = await connect();
    for (let i = 0; i < 2; i++) await strategy.apply(setup, nextOp(truth, i, "send"), quiet, stats());
    await cast.record("redis", "Messages 1 and 2 have arrived; the user has read neither.");
    if (scenario === "crash") await crash(cast, connect);
    else await againstSend(cast, connect, scenario === "race" ? READER : MUTER);
    const last = steps.at(-1) ?? { list: 0, badge: 0, muted: false };
    const expected = truth.unread(USER, CONVERSATION);
    const expectedBadge = truth.total(USER);
    // What the list adds up to: a muted conversation's count is shown, greyed, but stays out of the badge.
    const shown = last.muted ? 0 : last.list;
    return {
      strategy: name,
      scenario,
      steps,
      truth: expected,
      truthBadge: expectedBadge,
      verdict:
        last.badge !== shown ? "drift" : last.list !== expected || last.badge !== expectedBadge ? "wrong" : "correct",
      summary: SUMMARIES[scenario][name],
    };
  } finally {
    await labRedis.deleteKeys(prefix).catch(() => 0);
    for (const conn of conns) conn.disconnect();
  }
}

/** The user's operation that races message 3 in a story. */
interface Racer {
  actor: LabStoryStep["actor"];
  kind: LabOp["kind"];
  /** What the user does, shown when it starts. */
  action: string;
}

const READER: Racer = {
  actor: "reader",
  kind: "read",
  action: "Opens the conversation, having seen messages 1 and 2: read up to 2",
};
const MUTER: Racer = { actor: "user", kind: "mute", action: "Mutes the conversation (messages 1 and 2 unread)" };

/** The user reads (up to 2) or mutes the conversation while message 3 is between its two writes. */
async function againstSend(cast: Cast, connect: () => Promise<RedisClient>, racer: Racer): Promise<void> {
  const other = nextOp(cast.truth, 2, racer.kind);
  const sender = nextOp(cast.truth, 3, "send");
  const [senderConn, otherConn] = await Promise.all([connect(), connect()]);

  let otherRun: Promise<void> | undefined;
  let blocked: () => void = () => undefined;
  const otherBlocked = new Promise<void>((resolve) => (blocked = resolve));
  const otherHooks: OpHooks = {
    gap: async () => undefined,
    trace: (action) => cast.record(racer.actor, action),
    waiting: () => {
      cast.note(racer.actor, "SET lock NX → nil: the sender holds the lock; wait, retry with backoff");
      blocked();
    },
  };
  const senderHooks: OpHooks = {
    trace: (action) => cast.record("sender", action),
    gap: async () => {
      if (otherRun) return;
      cast.note("sender", `…delayed ${gapOf(cast.strategy.name)} (a GC pause, a slow network)`);
      cast.note(racer.actor, racer.action);
      otherRun = cast.strategy.apply(otherConn, other, otherHooks, stats());
      await Promise.race([otherRun, otherBlocked]);
    },
  };
  cast.note("sender", "Message 3 is committed; its unread update starts");
  await cast.strategy.apply(senderConn, sender, senderHooks, stats());
  await otherRun;
}

/** The worker applying message 3 dies between its two writes; the outbox redelivers the message. */
async function crash(cast: Cast, connect: () => Promise<RedisClient>): Promise<void> {
  const op = nextOp(cast.truth, 2, "send");
  const first = await connect();
  cast.note("worker", "Message 3 is committed; worker A starts its unread update");
  try {
    await cast.strategy.apply(
      first,
      op,
      {
        trace: (action) => cast.record("worker", `A: ${action}`),
        gap: async () => {
          throw new WorkerDied();
        },
      },
      stats(),
    );
  } catch (err) {
    if (!(err instanceof WorkerDied)) throw err;
  }
  first.disconnect();
  cast.note(
    "worker",
    `Worker A dies ${gapOf(cast.strategy.name)}; its connection (and any lock or WATCH) goes with it`,
  );
  const second = await connect();
  cast.note("worker", "The outbox redelivers message 3 to worker B");
  await cast.strategy.apply(
    second,
    op,
    {
      gap: async () => undefined,
      trace: (action) => cast.record("worker", `B: ${action}`),
      waiting: () =>
        cast.note(
          "worker",
          `B: SET lock NX → nil: A's lock is held until its lease (${STORY_LOCK_TTL_MS} ms) runs out`,
        ),
    },
    stats(),
  );
}

/** The scenario for all four strategies, one after another on the same Redis. */
export async function replayStories(scenario: LabStoryScenario, labRedis: LabRedis): Promise<LabStory[]> {
  const stories: LabStory[] = [];
  for (const name of STRATEGIES) stories.push(await replayStory(scenario, name, labRedis));
  return stories;
}
