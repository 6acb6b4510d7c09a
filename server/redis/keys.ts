/**
 * Every Redis key Tally uses is built here. All keys of one user share the hash tag `{u:<id>}` so that each
 * script touches a single cluster slot. `prefix` lets the lab and tests run on their own key space.
 */
export interface UserKeys {
  meta: string;
  unread: string;
  seen: string;
  read: string;
}

export function userKeys(userId: number, prefix = ""): UserKeys {
  const tag = `${prefix}{u:${userId}}`;
  return { meta: `${tag}:meta`, unread: `${tag}:unread`, seen: `${tag}:seen`, read: `${tag}:read` };
}

/** The order every unread script expects its KEYS in. */
export function unreadScriptKeys(userId: number, prefix = ""): [string, string, string, string] {
  const k = userKeys(userId, prefix);
  return [k.meta, k.unread, k.seen, k.read];
}

/** Room a user's sockets join on every instance: pushes to it reach all their tabs. */
export function userRoom(userId: number): string {
  return `user:${userId}`;
}
