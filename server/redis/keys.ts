/**
 * Every Redis key Tally uses is built here. All keys of one user share the hash tag `{u:<id>}` so that each
 * script touches a single cluster slot. `prefix` lets the lab and tests run on their own key space.
 */
import ipaddr from "ipaddr.js";

export interface UserKeys {
  /** The two sums, version, epoch, replication term, rebuild ticket and layout (server/redis/lua/includes/unread.lua). */
  meta: string;
  /** Conversation -> its record: every register and derived value of the conversation in one field. */
  convs: string;
  /** Conversation -> 1 once the user left it or it was deleted. */
  gone: string;
  /** Unread expiry (UNREAD_TTL_DAYS): timestamps of unread messages that may still expire. */
  times: string;
  /** Messages that mention the user: zset of '<conversation>:<seq>' (score 0, lex order). */
  ment: string;
}

/**
 * The layout's number is part of its key names: scripts of the layout before it (a hash per register, under
 * `{u:<id>}:meta` …) never read this state, nor these scripts theirs, so instances of both versions can run side by
 * side during a rolling restart, each with a cache of its own rebuilt from the database.
 */
const LAYOUT = "v2";

export function userKeys(userId: number, prefix = ""): UserKeys {
  const tag = `${prefix}{u:${userId}}:${LAYOUT}`;
  return {
    meta: `${tag}:meta`,
    convs: `${tag}:convs`,
    gone: `${tag}:gone`,
    times: `${tag}:times`,
    ment: `${tag}:ment`,
  };
}

export type UnreadScriptKeys = [meta: string, convs: string, gone: string, times: string, ment: string];

/** The order every unread script expects its KEYS in. */
export function unreadScriptKeys(userId: number, prefix = ""): UnreadScriptKeys {
  const k = userKeys(userId, prefix);
  return [k.meta, k.convs, k.gone, k.times, k.ment];
}

/** The keys of the layout before this one, a hash per register: every rebuild deletes what they still hold. */
export type LegacyKeys = [
  meta: string,
  unread: string,
  seen: string,
  read: string,
  gone: string,
  times: string,
  aged: string,
  ment: string,
  mcount: string,
  state: string,
];

/** rebuild.lua's KEYS: the unread scripts' keys, then the earlier layout's. */
export function rebuildScriptKeys(userId: number, prefix = ""): [...UnreadScriptKeys, ...LegacyKeys] {
  const tag = `${prefix}{u:${userId}}`;
  const names = ["meta", "unread", "seen", "read", "gone", "times", "aged", "ment", "mcount", "state"];
  return [...unreadScriptKeys(userId, prefix), ...(names.map((name) => `${tag}:${name}`) as LegacyKeys)];
}

/**
 * The lab's two-step strategies (naive, lock, WATCH) keep a user's badge the way many apps do: a total in `meta`,
 * a count per conversation in `unread`, and "muted" per conversation in `state`.
 */
export function counterKeys(userId: number, prefix: string): { meta: string; unread: string; state: string } {
  const tag = `${prefix}{u:${userId}}`;
  return { meta: `${tag}:meta`, unread: `${tag}:unread`, state: `${tag}:state` };
}

/** Room a user's sockets join on every instance: pushes to it reach all their tabs. */
/**
 * Settings the instances run with that a tool must use too: `unreadTtlMs`, for `npm run reconcile` (a pass with
 * another expiry than the instances' counted expired messages again, or dropped unexpired ones).
 */
export const SETTINGS_KEY = "tally:settings";

export function userRoom(userId: number): string {
  return `user:${userId}`;
}

/** The consistency lab's key space for one run and strategy (server/lab); chat keys never carry a prefix. */
export function labPrefix(runId: string, strategy: string): string {
  return `lab:${runId}:${strategy}:`;
}

/** A user's lock for the lab's lock strategy, in the same hash slot as the user's other keys. */
export function userLockKey(userId: number, prefix = ""): string {
  return `${prefix}{u:${userId}}:lock`;
}

/** Room every socket of one server-side session joins: revoking the session disconnects it on every instance. */
export function sessionRoom(sessionId: string): string {
  return `session:${sessionId}`;
}

/**
 * Rate-limit keys: per user in the user's hash slot, per address and per name in a slot of their own. The
 * limiter library adds its own key prefix (`rl:<limit>:`) in front.
 */
export function limitSubject(
  subject: { userId: number } | { address: string } | { name: string; address?: string },
): string {
  if ("userId" in subject) return `{u:${subject.userId}}`;
  if (!("name" in subject)) return `{a:${addressBucket(subject.address)}}`;
  const name = `{n:${subject.name.toLowerCase()}}`;
  return subject.address === undefined ? name : `${name}a:${addressBucket(subject.address)}`;
}

/**
 * What a per-address limit counts by: an IPv4 address (written as such when it comes IPv4-mapped, `::ffff:a.b.c.d`),
 * or an IPv6 address's /64, which one subscriber holds whole (RFC 6177): counted by the address, each of its 2^64
 * addresses would have a limit of its own. Anything else (not an address: "unknown") as it is.
 */
export function addressBucket(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === "ipv4") return parsed.toString();
  const prefix = ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toNormalizedString()}/64`);
  return `${prefix.toString()}/64`;
}
