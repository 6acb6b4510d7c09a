/**
 * Every Redis key Tally uses is built here. All keys of one user share the hash tag `{u:<id>}` so that each
 * script touches a single cluster slot. `prefix` lets the lab and tests run on their own key space.
 */
export interface UserKeys {
  meta: string;
  unread: string;
  seen: string;
  read: string;
  gone: string;
  /** Unread expiry (UNREAD_TTL_DAYS): timestamps of unread messages that may still expire. */
  times: string;
  /** Unread expiry: conversation -> highest expired seq above the read cursor. */
  aged: string;
  /** Messages that mention the user: zset of '<conversation>:<seq>' (score 0, lex order). */
  ment: string;
  /** Conversation -> mention count (absent = 0). */
  mcount: string;
  /** Conversation -> its mute and mark registers (server/redis/lua/includes/unread.lua). */
  state: string;
}

export function userKeys(userId: number, prefix = ""): UserKeys {
  const tag = `${prefix}{u:${userId}}`;
  return {
    meta: `${tag}:meta`,
    unread: `${tag}:unread`,
    seen: `${tag}:seen`,
    read: `${tag}:read`,
    gone: `${tag}:gone`,
    times: `${tag}:times`,
    aged: `${tag}:aged`,
    ment: `${tag}:ment`,
    mcount: `${tag}:mcount`,
    state: `${tag}:state`,
  };
}

export type UnreadScriptKeys = [
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

/** The order every unread script expects its KEYS in. */
export function unreadScriptKeys(userId: number, prefix = ""): UnreadScriptKeys {
  const k = userKeys(userId, prefix);
  return [k.meta, k.unread, k.seen, k.read, k.gone, k.times, k.aged, k.ment, k.mcount, k.state];
}

/** Room a user's sockets join on every instance: pushes to it reach all their tabs. */
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
export function limitSubject(subject: { userId: number } | { address: string } | { name: string }): string {
  if ("userId" in subject) return `{u:${subject.userId}}`;
  if ("address" in subject) return `{a:${subject.address}}`;
  return `{n:${subject.name.toLowerCase()}}`;
}
