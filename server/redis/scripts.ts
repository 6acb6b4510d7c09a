import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Redis, Result } from "ioredis";
import type { UnreadScriptKeys } from "./keys.ts";

function read(path: string): string {
  return readFileSync(fileURLToPath(new URL(`./lua/${path}.lua`, import.meta.url)), "utf8");
}

/** A script's text with its `--- @include "<name>"` lines replaced by lua/includes/<name>.lua (as BullMQ does). */
function lua(name: string): string {
  return read(name).replace(/^--- @include "([\w-]+)"$/gm, (_, include: string) => read(`includes/${include}`));
}

/**
 * The registry of Lua scripts, loaded with `defineCommand` (EVALSHA with a NOSCRIPT fallback, pipelinable).
 * Those that expire take an optional "now" (ms) that tests pass; production omits it and they read Redis' TIME.
 */
export const scripts = {
  tallyApply: { numberOfKeys: 7, lua: lua("apply") },
  /** snapshot.lua with its first two keys: a pure read that never expires anything (the lab, raw checks). */
  tallySnapshot: { numberOfKeys: 2, lua: lua("snapshot"), readOnly: true },
  /** snapshot.lua with every key: expires unread messages past the TTL first, so it may write. */
  tallySnapshotExpiring: { numberOfKeys: 7, lua: lua("snapshot") },
  tallyRebuild: { numberOfKeys: 7, lua: lua("rebuild") },
  tallyRemove: { numberOfKeys: 7, lua: lua("remove") },
  tallyInspect: { numberOfKeys: 7, lua: lua("inspect") },
} as const;

export function defineScripts(redis: Redis): Redis {
  for (const [name, definition] of Object.entries(scripts)) redis.defineCommand(name, definition);
  return redis;
}

type Key = string;
/** Raw reply of apply.lua: [unread, total, version, epoch, changed] or [-1] when state is missing. */
export type ApplyReply = [number, number, number, string, 0 | 1] | [-1];
/** Raw reply of snapshot.lua: [epoch, version, total, conv, unread, ...], [-1] (missing) or [-2] (needs repair). */
export type SnapshotReply = [string, number, number, ...string[]] | [-1] | [-2];
/** Raw reply of snapshot.lua with all keys: [epoch, version, total, expired, conv, unread, ...], [-1] or [-2]. */
export type ExpiringSnapshotReply = [string, number, number, 0 | 1, ...string[]] | [-1] | [-2];
/** Raw reply of rebuild.lua. */
export type RebuildReply = [string, number, number, "created" | "merged" | "replaced" | "unchanged"];
/**
 * Raw reply of inspect.lua: HGETALL lists of meta, unread, seen, read, gone and aged, the "now" it used in ms,
 * and 1 when expiry started a new epoch; or [-1].
 */
export type InspectReply = [string[], string[], string[], string[], string[], string[], number, 0 | 1] | [-1];

declare module "ioredis" {
  interface RedisCommander<Context> {
    tallyApply(
      ...args: [
        ...UnreadScriptKeys,
        conversationId: number,
        seenSeq: number,
        readSeq: number,
        createdAtMs?: number,
        ttlMs?: number,
        nowMs?: number,
      ]
    ): Result<ApplyReply, Context>;
    tallySnapshot(meta: Key, unread: Key): Result<SnapshotReply, Context>;
    tallySnapshotExpiring(
      ...args: [...UnreadScriptKeys, ttlMs: number, nowMs?: number]
    ): Result<ExpiringSnapshotReply, Context>;
    /**
     * `rest`: (conversation, lastSeq, lastReadSeq) triples, then optionally "ttl", ms, ["now", ms,]
     * (conversation, seq, createdAt) triples.
     */
    tallyRebuild(
      ...args: [...UnreadScriptKeys, epoch: string, mode: "merge" | "replace", ...rest: (number | string)[]]
    ): Result<RebuildReply, Context>;
    tallyRemove(...args: [...UnreadScriptKeys, conversationId: number]): Result<ApplyReply, Context>;
    tallyInspect(...args: [...UnreadScriptKeys, ttlMs?: number, nowMs?: number]): Result<InspectReply, Context>;
  }
}
