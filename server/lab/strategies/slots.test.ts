import { Redis, type Command } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { keySlot } from "../../redis/client.ts";
import { labPrefix, userLockKey, type UnreadScriptKeys } from "../../redis/keys.ts";
import { STRATEGIES } from "../params.ts";
import { defineLabScripts } from "../scripts.ts";
import { Truth, type LabOp } from "../workload.ts";
import { createStrategy } from "./index.ts";

interface Recorded {
  name: string;
  keys: string[];
}

const opened: Redis[] = [];
afterEach(() => {
  for (const conn of opened.splice(0)) conn.disconnect();
});

/**
 * A connection that never connects: it records each command with the keys ioredis finds in it (the keys a
 * cluster client routes by, a script's KEYS included) and answers it the way a fresh Redis would, enough for
 * every strategy to run its whole operation.
 */
function recordingConnection(): { conn: Redis; commands: Recorded[] } {
  const commands: Recorded[] = [];
  const conn = defineLabScripts(new Redis({ lazyConnect: true }));
  opened.push(conn);
  let transaction: unknown[] | null = null;
  const answer = (command: Command): unknown => {
    switch (command.name) {
      case "multi":
        transaction = [];
        return "OK";
      case "exec": {
        const replies = transaction;
        transaction = null;
        return replies;
      }
      case "set":
      case "watch":
      case "unwatch":
        return "OK";
      case "hget":
        return null;
      case "hgetall":
        return [];
      case "evalsha":
        // The lock's release and renewal (one key) succeed; Tally's scripts (ten keys) answer with live state.
        return Number(command.args[1]) === 1 ? 1 : [0, 0, 1, "lab-epoch", 1, 0, 0, 0, 0];
      default:
        return 1;
    }
  };
  conn.sendCommand = ((command: Command) => {
    commands.push({ name: command.name, keys: command.getKeys().map(String) });
    const reply = answer(command);
    if (transaction && command.name !== "multi") {
      transaction.push(reply);
      command.resolve("QUEUED");
    } else command.resolve(reply);
    return command.promise;
  }) as Redis["sendCommand"];
  return { conn, commands };
}

const CONVERSATION = 3;
const ops = (userId: number): LabOp[] =>
  (["send", "read", "mute"] as const).map((kind, index) => ({
    index,
    kind,
    userId,
    conversationId: CONVERSATION,
    seq: kind === "mute" ? 0 : 1,
  }));

describe("the strategies' keys on a Redis Cluster", () => {
  it.each(STRATEGIES)(
    "%s: every key one user's operations and reads touch is in that user's slot, lock and watched keys too",
    async (name) => {
      const prefix = labPrefix("slots", name);
      for (const userId of [1, 42, 1000, 65_535]) {
        const { conn, commands } = recordingConnection();
        const strategy = createStrategy(name, {
          prefix,
          truth: new Truth(1, CONVERSATION),
          lock: { ttlMs: 60_000, watchdog: true, maxAttempts: 1 },
          watch: { maxRetries: 0 },
        });
        const stats = { retries: 0, lockWaits: 0 };
        await strategy.prepare(conn, [userId]);
        for (const op of ops(userId)) await strategy.apply(conn, op, { gap: async () => undefined }, stats);
        await strategy.read(conn, [userId]);

        const keys = commands.flatMap((c) => c.keys);
        expect(keys.length).toBeGreaterThan(0);
        expect(new Set(keys.map(keySlot))).toEqual(new Set([keySlot(`{u:${userId}}`)]));
        if (name === "lock") expect(keys).toContain(userLockKey(userId, prefix));
        if (name === "watch")
          expect(commands.filter((c) => c.name === "watch").map((c) => c.keys.length)).toEqual([3, 3, 3]);
      }
    },
  );

  it("the recorder sees the keys a command names, so a key outside the user's slot would show", async () => {
    const { conn, commands } = recordingConnection();
    await conn.multi().hget("lab:x:{u:1}:meta", "total").hget("lab:x:{u:2}:meta", "total").exec();
    await conn.tallySnapshot(...(Array.from({ length: 5 }, (_, i) => `k${i}`) as UnreadScriptKeys));
    const slots = new Set(commands.flatMap((c) => c.keys).map(keySlot));
    expect(slots.size).toBe(7);
  });
});
