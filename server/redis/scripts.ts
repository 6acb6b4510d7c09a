import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Redis, Result } from "ioredis";

function lua(name: string): string {
  return readFileSync(fileURLToPath(new URL(`./lua/${name}.lua`, import.meta.url)), "utf8");
}

/** The registry of Lua scripts, loaded with `defineCommand` (EVALSHA with a NOSCRIPT fallback, pipelinable). */
export const scripts = {
  tallyApply: { numberOfKeys: 4, lua: lua("apply") },
  tallySnapshot: { numberOfKeys: 2, lua: lua("snapshot"), readOnly: true },
  tallyRebuild: { numberOfKeys: 4, lua: lua("rebuild") },
} as const;

export function defineScripts(redis: Redis): Redis {
  for (const [name, definition] of Object.entries(scripts)) redis.defineCommand(name, definition);
  return redis;
}

type Key = string;
/** Raw reply of apply.lua: [unread, total, version, epoch, changed] or [-1] when state is missing. */
export type ApplyReply = [number, number, number, string, 0 | 1] | [-1];
/** Raw reply of snapshot.lua: [epoch, version, total, conv, unread, ...] or [-1]. */
export type SnapshotReply = [string, number, number, ...string[]] | [-1];
/** Raw reply of rebuild.lua. */
export type RebuildReply = [string, number, number, "created" | "merged" | "unchanged"];

declare module "ioredis" {
  interface RedisCommander<Context> {
    tallyApply(
      meta: Key,
      unread: Key,
      seen: Key,
      read: Key,
      conversationId: number,
      seenSeq: number,
      readSeq: number,
    ): Result<ApplyReply, Context>;
    tallySnapshot(meta: Key, unread: Key): Result<SnapshotReply, Context>;
    tallyRebuild(
      meta: Key,
      unread: Key,
      seen: Key,
      read: Key,
      epoch: string,
      ...triples: (string | number)[]
    ): Result<RebuildReply, Context>;
  }
}
