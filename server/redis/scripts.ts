import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Cluster, Redis, Result } from "ioredis";
import type { UnreadState, UnreadUpdate } from "../contracts/index.ts";
import type { LegacyKeys, UnreadScriptKeys } from "./keys.ts";

function read(path: string): string {
  return readFileSync(fileURLToPath(new URL(`./lua/${path}.lua`, import.meta.url)), "utf8");
}

/**
 * The numbers a script's `--- @constants` lines name: each is followed by one `local A, B = 1, 2` line.
 */
export function constantsOf(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const [, names, values] of text.matchAll(/^--- @constants\nlocal ([\w, ]+) = ([\d, ]+)$/gm)) {
    const list = values!.split(",").map((v) => Number(v.trim()));
    names!.split(",").forEach((n, i) => out.set(n.trim(), list[i]!));
  }
  return out;
}

/**
 * A script's text with its `--- @include "<name>"` lines replaced by lua/includes/<name>.lua (as BullMQ does), and
 * its `--- @constants` folded: the lines go and each name is replaced by its number. Redis runs a script's whole body
 * on every call, so every `local function` is a new closure each time, and each constant one of them reads would be
 * one more upvalue to make (docs/benchmarks.md, "apply.lua against a trivial script").
 */
function lua(name: string): string {
  return expand(read(name));
}

function expand(source: string): string {
  const text = source.replace(/^--- @include "([\w-]+)"$/gm, (_, include: string) => read(`includes/${include}`));
  let folded = text.replace(/^--- @constants\nlocal [\w, ]+ = [\d, ]+\n/gm, "");
  for (const [constant, value] of constantsOf(text))
    folded = folded.replace(new RegExp(`\\b${constant}\\b`, "g"), String(value));
  return folded;
}

/**
 * The registry of Lua scripts, loaded with `defineCommand` (EVALSHA with a NOSCRIPT fallback, pipelinable).
 * Those that expire take an optional "now" (ms) that tests pass; production omits it and they read Redis' TIME.
 */
export const scripts = {
  tallyApply: { numberOfKeys: 5, lua: lua("apply") },
  /**
   * deliver.lua: apply.lua for each member of a message (its body wrapped as `apply_one`), then one PUBLISH of the
   * delivery. Called with the number of keys first (five per member); answers [published, ...replies].
   */
  tallyDeliver: { lua: expand(`local function apply_one(KEYS, ARGV)\n${read("apply")}\nend\n${read("deliver")}`) },
  /** snapshot.lua without expiry: a pure read (the lab, raw checks). */
  tallySnapshot: { numberOfKeys: 5, lua: lua("snapshot"), readOnly: true },
  /** snapshot.lua with expiry: expires unread messages past the TTL first, so it may write. */
  tallySnapshotExpiring: { numberOfKeys: 5, lua: lua("snapshot") },
  /** Also given the earlier layout's keys, which it deletes (keys.ts rebuildScriptKeys). */
  tallyRebuild: { numberOfKeys: 15, lua: lua("rebuild") },
  /** The ticket a rebuild takes before its database read (ticket.lua), which rebuild.lua checks. */
  tallyTicket: { numberOfKeys: 1, lua: lua("ticket") },
  tallyRemove: { numberOfKeys: 5, lua: lua("remove") },
  tallyInspect: { numberOfKeys: 5, lua: lua("inspect") },
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

/** What an apply.lua reply says about its conversation, and whether it changed the user's state; null: missing. */
export function updateOf(conversationId: number, reply: ApplyReply): { update: UnreadUpdate; changed: boolean } | null {
  if (reply.length === 1) return null;
  const [unreadCount, totalUnread, version, epoch, changed, mentionCount, totalMentions, muted, markVersion] = reply;
  return {
    update: {
      conversationId,
      unreadCount,
      mentionCount,
      muted: muted === 1,
      markedUnread: markVersion > 0,
      markVersion,
      totalUnread,
      totalMentions,
      version,
      epoch,
    },
    changed: changed === 1,
  };
}
/**
 * Raw reply of snapshot.lua: [epoch, version, total, totalMentions, expired, then per conversation with anything
 * to show: conv, unread, mentions, muted, markVersion], [-1] (missing) or [-2] (needs repair).
 */
export type SnapshotReply = [string, number, number, number, 0 | 1, ...(string | number)[]] | [-1] | [-2];
/** Raw reply of rebuild.lua. */
export type RebuildReply =
  | [string, number, number, "created" | "merged" | "replaced" | "unchanged", number]
  /**
   * State the caller's database read may predate (fenced by a failover, or lost since the caller's ticket): take a
   * ticket, read again and pass `"term", term` (rebuild.lua).
   */
  | ["", 0, 0, "fenced", 0, string];
/**
 * Raw reply of inspect.lua: flat (field, value) lists of meta, unread, seen, read, gone and aged, the "now" it used
 * in ms, 1 when expiry started a new epoch, and lists of mcount and state (the records' fields, one list per field,
 * zeros left out); or [-1].
 */
type Flat = (string | number)[];
export type InspectReply = [Flat, Flat, Flat, Flat, Flat, Flat, number, 0 | 1, Flat, string[]] | [-1];

/**
 * The fields of a conversation's record in `{u:<id>}:convs`, in the order lua/includes/unread.lua stores them
 * (joined by ':', trailing zeros left out); scripts.test.ts checks that the two agree. The scripts are the only
 * writers: this is for reading a record, and for tests that write drift from outside the scripts.
 */
export const RECORD_FIELDS = [
  "seen",
  "read",
  "unread",
  "mentions",
  "marked",
  "aged",
  "muteVersion",
  "muted",
  "markVersion",
  "markAt",
  "cleared",
] as const;
export type ConversationRecord = Record<(typeof RECORD_FIELDS)[number], number>;

/** A stored record (null or "" for a conversation without one: every field 0). */
export function parseRecord(raw: string | null): ConversationRecord {
  const values = raw ? raw.split(":").map(Number) : [];
  return Object.fromEntries(RECORD_FIELDS.map((f, i) => [f, values[i] ?? 0])) as ConversationRecord;
}

/** A record as the scripts store it; "" when every field is 0 (the scripts then store no field). */
export function formatRecord(record: ConversationRecord): string {
  const values = RECORD_FIELDS.map((f) => record[f]);
  while (values.length > 0 && values.at(-1) === 0) values.pop();
  return values.join(":");
}

/** The meta fields a plain snapshot reads, in this order (snapshot.lua's HMGET). */
export const SNAPSHOT_META_FIELDS = ["epoch", "version", "total", "mentions", "term"] as const;

/** A user's unread state as a snapshot reads it: every count with its total, in one instant's state. */
export interface UnreadCounts {
  epoch: string;
  version: number;
  totalUnread: number;
  totalMentions: number;
  /** Conversations with anything to show (unread or mentions > 0, muted, marked); the others are all zero. */
  counts: Map<number, UnreadState>;
}

/** A snapshot read: the counts (`expired`: the read itself expired some, so tabs resync), or -1 (missing) or -2 (drift). */
export type SnapshotRead = (UnreadCounts & { expired: boolean }) | -1 | -2;

/** One conversation's state as a snapshot lists it. */
function stateOf(unreadCount: number, mentionCount: number, muted: number, markVersion: number): UnreadState {
  return { unreadCount, mentionCount, muted: muted === 1, markedUnread: markVersion > 0, markVersion };
}

/** snapshot.lua's reply, read. */
export function readOfReply(reply: SnapshotReply): SnapshotRead {
  if (reply.length === 1) return reply[0] as -1 | -2;
  const [epoch, version, totalUnread, totalMentions, expired] = reply as Exclude<SnapshotReply, [-1] | [-2]>;
  const counts = new Map<number, UnreadState>();
  for (let i = 5; i + 4 < reply.length; i += 5) {
    const state = stateOf(Number(reply[i + 1]), Number(reply[i + 2]), Number(reply[i + 3]), Number(reply[i + 4]));
    counts.set(Number(reply[i]), state);
  }
  return { epoch, version: Number(version), totalUnread, totalMentions, expired: expired === 1, counts };
}

/**
 * What snapshot.lua answers without expiry, read from a plain atomic read of the same state: the meta fields
 * (SNAPSHOT_META_FIELDS) and every record (HGETALL), read in one MULTI, and on a cluster node its replication id
 * (`nodeTerm`, INFO's master_replid; null on a single Redis). The same rule as the script's (lua/includes/sums.lua):
 * the sums are checked against the values handed out, -2 when they differ, -1 when the state is missing. Null
 * when only the script can tell: state stamped by another term than this node's or written before stamps
 * (lua/includes/fence.lua), which the script treats as missing. Read by snapshot.ts (readPlainSnapshot).
 *
 * One pass from the records to the counts: for a big user this is most of a sync's Redis half, on the instance's
 * event loop (1.6 ms for 5000 records against 4.0 when it built the script's flat reply first and read that, docs/benchmarks.md,
 * "A thirteenth look").
 */
export function snapshotOfRecords(
  meta: readonly (string | null)[],
  records: Readonly<Record<string, string>>,
  nodeTerm: string | null,
): SnapshotRead | null {
  const [epoch, version, total, mentions, term] = meta;
  if (term === undefined || term === null || (term !== "-" && term !== nodeTerm)) return epoch ? null : -1;
  if (!epoch) return -1;
  const num = (s: string | null | undefined) => (s === undefined || s === null ? 0 : Number(s) || 0);
  const counts = new Map<number, UnreadState>();
  let sum = 0;
  let sumMentions = 0;
  for (const conv in records) {
    // seen:read:unread:mentions:marked:aged:muteVersion:muted:markVersion (RECORD_FIELDS; zeros at the end left out)
    const f = records[conv]!.split(":");
    const unread = num(f[2]);
    const mentionCount = num(f[3]);
    const marked = num(f[4]);
    const muted = num(f[7]);
    sumMentions += mentionCount;
    sum += muted === 1 ? mentionCount : unread;
    if (unread > 0 || mentionCount > 0 || muted === 1 || marked === 1) {
      counts.set(Number(conv), stateOf(unread, mentionCount, muted, marked === 1 ? num(f[8]) : 0));
    }
  }
  if (sum !== num(total) || sumMentions !== num(mentions)) return -2;
  return { epoch, version: num(version), totalUnread: sum, totalMentions: sumMentions, expired: false, counts };
}

/** apply.lua's optional named parts after its positional arguments. */
export type ApplyPart = "mention" | "own" | "deleted" | "mute" | "mark" | "clear" | number;

declare module "ioredis" {
  interface RedisCommander<Context> {
    /**
     * `parts` (needs all of createdAtMs, ttlMs and nowMs, '' for none): "mention" | "own" | "mute", version, 0|1 |
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
    /**
     * `numberOfKeys` (five per member), the members' apply.lua keys, the channel, the payload's head, then per
     * member: conversationId, seenSeq, readSeq, createdAtMs, ttlMs, nowMs or '', "mention" or ''. Answers whether
     * it published (1), then each member's reply.
     */
    tallyDeliver(numberOfKeys: number, ...args: (string | number)[]): Result<[0 | 1, ...ApplyReply[]], Context>;
    tallySnapshot(...keys: UnreadScriptKeys): Result<SnapshotReply, Context>;
    tallySnapshotExpiring(
      ...args: [...UnreadScriptKeys, ttlMs: number, nowMs?: number]
    ): Result<SnapshotReply, Context>;
    /**
     * `rest`: optionally "term" and the term a "fenced" answer named, then optionally "ticket" and the ticket
     * `tallyTicket` gave before the database read, then (conversation, lastSeq, lastReadSeq,
     * muteVersion, muted, markVersion, markAt, markCleared) tuples, then optionally "mentions", (conversation, seq)
     * pairs, then optionally "gone" and conversations, then optionally "ttl", ms, ["now", ms,] (conversation, seq,
     * createdAt) triples. ioredis flattens an array argument (one level): a long list goes as one array, since a
     * spread of more than some 100k elements overflows V8's stack.
     */
    tallyRebuild(
      ...args: [
        ...UnreadScriptKeys,
        ...LegacyKeys,
        epoch: string,
        mode: "merge" | "replace",
        ...rest: (number | string | readonly (number | string)[])[],
      ]
    ): Result<RebuildReply, Context>;
    /**
     * The user's meta key and a new unique string: the meta's ticket, `<term>/<that string>` if it held none or one
     * of another term (ticket.lua).
     */
    tallyTicket(meta: string, candidate: string): Result<string, Context>;
    /**
     * `nowMs`: the instant the "gone" mark is stamped with ("": the server's TIME); `memoryMs`: how long marks are kept
     * (older ones are pruned now and then; without it, none).
     */
    tallyRemove(
      ...args: [...UnreadScriptKeys, conversationId: number, nowMs?: number | "", memoryMs?: number]
    ): Result<ApplyReply, Context>;
    tallyInspect(...args: [...UnreadScriptKeys, ttlMs?: number, nowMs?: number]): Result<InspectReply, Context>;
  }
}
