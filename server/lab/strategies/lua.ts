import { groupByNode, type RedisClient } from "../../redis/client.ts";
import { rebuildScriptKeys, unreadScriptKeys, userKeys } from "../../redis/keys.ts";
import { toState, type Strategy, type StrategyContext, type UserState } from "./types.ts";

let epochs = 0;
function labEpoch(): string {
  return `lab-${Date.now().toString(36)}-${++epochs}`;
}

/**
 * Tally's production scripts: one apply.lua call per event, on max-registers (seen, read) from which the
 * unread is derived, so the count, the total and the version change in one atomic, idempotent,
 * order-insensitive step. Missing state (a Redis restart) is rebuilt from the truth, as production rebuilds it
 * from the database.
 */
export function luaStrategy(ctx: StrategyContext): Strategy {
  const rebuild = (conn: RedisClient, userId: number) =>
    conn.tallyRebuild(...rebuildScriptKeys(userId, ctx.prefix), labEpoch(), "merge", ...ctx.truth.memberships(userId));

  /** What the records hold, read with inspect.lua: the stored total, each conversation's count, the muted ones. */
  async function storedCounters(conn: RedisClient, userId: number): Promise<UserState> {
    const reply = await conn.tallyInspect(...unreadScriptKeys(userId, ctx.prefix));
    if (reply.length === 1) return toState(0, []);
    const [meta, unread, , , , , , , , state] = reply;
    const total = meta[meta.indexOf("total") + 1];
    const muted = state.flatMap((v, i) => (i % 2 === 1 && v.split(":")[1] === "1" ? [state[i - 1]!] : []));
    return toState(total, unread.map(String), muted);
  }

  return {
    name: "lua",
    // One pipeline per node on a cluster. A rebuild that fails here is redone by the first apply that finds the
    // user's state missing.
    async prepare(conn, userIds) {
      const groups = groupByNode(conn, userIds, (id) => userKeys(id, ctx.prefix).meta);
      await Promise.all(
        groups.map((ids) => {
          const pipeline = conn.pipeline();
          for (const id of ids) pipeline.tallyRebuild(...rebuildScriptKeys(id, ctx.prefix), labEpoch(), "merge");
          return pipeline.exec();
        }),
      );
    },
    async apply(conn, op, hooks) {
      await hooks.gap();
      const keys = unreadScriptKeys(op.userId, ctx.prefix);
      const readSeq = op.kind === "read" ? op.seq : 0;
      // A mute is version 1 of the conversation's mute register (the lab mutes once, never unmutes).
      const call = () =>
        op.kind === "mute"
          ? conn.tallyApply(...keys, op.conversationId, 0, 0, 0, 0, "", "mute", 1, 1)
          : conn.tallyApply(...keys, op.conversationId, op.seq, readSeq);
      let reply = await call();
      if (reply.length === 1) {
        const rebuilt = await rebuild(conn, op.userId);
        await hooks.trace?.(`apply.lua → missing; rebuild.lua from the truth → ${rebuilt[3]}, total ${rebuilt[2]}`);
        reply = await call();
        if (reply.length === 1) throw new Error(`lab user ${op.userId} vanished right after its rebuild`);
      }
      const [unread, total, version, , changed] = reply;
      const args = op.kind === "mute" ? "mute version 1: muted" : `seen ${op.seq}, read ${readSeq}`;
      await hooks.trace?.(
        `apply.lua(conversation ${op.conversationId}, ${args}) → unread ${unread}, total ${total}, version ${version}${changed ? "" : " (unchanged)"}`,
      );
    },
    read(conn, userIds, opts) {
      return Promise.all(
        userIds.map(async (userId): Promise<UserState> => {
          const snapshot = () => conn.tallySnapshot(...unreadScriptKeys(userId, ctx.prefix));
          let reply = await snapshot();
          // After a restart, missing state (no operation of this user came since) is rebuilt from the truth, as a
          // client's sync rebuilds it from the database. Only then: otherwise lost keys would be a bug to show.
          if (reply[0] === -1 && opts?.rebuildMissing) {
            await rebuild(conn, userId);
            reply = await snapshot();
          }
          if (reply[0] === -1) return toState(0, []);
          // -2: the stored total disagrees with the sum (only a bug could do that); measure it as it is.
          if (reply[0] === -2) return storedCounters(conn, userId);
          // After epoch, version, total, mentions and expired: (conversation, unread, mentions, muted, mark) each.
          const [, , total, , , ...flat] = reply as [string, number, number, number, 0 | 1, ...(string | number)[]];
          const pairs = flat.flatMap((v, i) => (i % 5 < 2 ? [String(v)] : []));
          const muted = flat.flatMap((v, i) => (i % 5 === 0 && Number(flat[i + 3]) === 1 ? [Number(v)] : []));
          return toState(total, pairs, muted);
        }),
      );
    },
  };
}
