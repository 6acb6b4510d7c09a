import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Cluster, Redis, Result } from "ioredis";
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
  tallyApply: { numberOfKeys: 10, lua: lua("apply") },
  /** snapshot.lua without expiry: a pure read (the lab, raw checks). */
  tallySnapshot: { numberOfKeys: 10, lua: lua("snapshot"), readOnly: true },
  /** snapshot.lua with expiry: expires unread messages past the TTL first, so it may write. */
  tallySnapshotExpiring: { numberOfKeys: 10, lua: lua("snapshot") },
  tallyRebuild: { numberOfKeys: 10, lua: lua("rebuild") },
  tallyRemove: { numberOfKeys: 10, lua: lua("remove") },
  tallyInspect: { numberOfKeys: 10, lua: lua("inspect") },
} as const;

export function defineScripts<T extends Redis | Cluster>(redis: T): T {
  for (const [name, definition] of Object.entries(scripts)) redis.defineCommand(name, definition);
  return redis;
}

/**
 * Raw reply of apply.lua (and remove.lua): [unread, total, version, epoch, changed, mentions, totalMentions,
 * muted, markVersion] (markVersion while marked unread, else 0), or [-1] when state is missing.
 */
export type ApplyReply = [number, number, number, string, 0 | 1, number, number, 0 | 1, number] | [-1];
/**
 * Raw reply of snapshot.lua: [epoch, version, total, totalMentions, expired, then per conversation with anything
 * to show: conv, unread, mentions, muted, markVersion], [-1] (missing) or [-2] (needs repair).
 */
export type SnapshotReply = [string, number, number, number, 0 | 1, ...(string | number)[]] | [-1] | [-2];
/** Raw reply of rebuild.lua. */
export type RebuildReply =
  | [string, number, number, "created" | "merged" | "replaced" | "unchanged", number]
  /** Fenced state the caller's database read may predate: read again and pass `"term", term` (rebuild.lua). */
  | ["", 0, 0, "fenced", 0, string];
/**
 * Raw reply of inspect.lua: HGETALL lists of meta, unread, seen, read, gone and aged, the "now" it used in ms,
 * 1 when expiry started a new epoch, and HGETALL lists of mcount and state; or [-1].
 */
export type InspectReply =
  [string[], string[], string[], string[], string[], string[], number, 0 | 1, string[], string[]] | [-1];

/** apply.lua's optional named parts after its positional arguments. */
export type ApplyPart = "mention" | "mute" | "mark" | "clear" | number;

declare module "ioredis" {
  interface RedisCommander<Context> {
    /**
     * `parts` (needs all of createdAtMs, ttlMs and nowMs, '' for none): "mention" | "mute", version, 0|1 |
     * "mark", version, atSeq | "clear", version.
     */
    tallyApply(
      ...args: [
        ...UnreadScriptKeys,
        conversationId: number,
        seenSeq: number,
        readSeq: number,
        createdAtMs?: number,
        ttlMs?: number,
        nowMs?: number | "",
        ...parts: ApplyPart[],
      ]
    ): Result<ApplyReply, Context>;
    tallySnapshot(...keys: UnreadScriptKeys): Result<SnapshotReply, Context>;
    tallySnapshotExpiring(
      ...args: [...UnreadScriptKeys, ttlMs: number, nowMs?: number]
    ): Result<SnapshotReply, Context>;
    /**
     * `rest`: optionally "term" and the term a "fenced" answer named, then (conversation, lastSeq, lastReadSeq,
     * muteVersion, muted, markVersion, markAt, markCleared) tuples, then optionally "mentions", (conversation, seq)
     * pairs, then optionally "gone" and conversations, then optionally "ttl", ms, ["now", ms,] (conversation, seq,
     * createdAt) triples.
     */
    tallyRebuild(
      ...args: [...UnreadScriptKeys, epoch: string, mode: "merge" | "replace", ...rest: (number | string)[]]
    ): Result<RebuildReply, Context>;
    tallyRemove(...args: [...UnreadScriptKeys, conversationId: number]): Result<ApplyReply, Context>;
    tallyInspect(...args: [...UnreadScriptKeys, ttlMs?: number, nowMs?: number]): Result<InspectReply, Context>;
  }
}
