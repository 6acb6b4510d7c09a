import type { UserDTO } from "../contracts/index.ts";
import {
  CLIENT_LIST_PAGE,
  listInput,
  markUnreadInput,
  muteInput,
  readInput,
  syncInput,
  type ListInput,
} from "../contracts/inputs.ts";
import { parse } from "../errors.ts";
import { syncSurcharge, type Limits } from "../limits/limits.ts";
import { oneAtATime } from "../limits/turns.ts";
import type { Logger } from "../log.ts";
import { onCommand } from "../realtime/command.ts";
import type { TallySocket } from "../realtime/types.ts";
import type { ReadService } from "./read.service.ts";
import type { SnapshotService } from "./snapshot.service.ts";
import type { StateService } from "./state.service.ts";

export interface UnreadDeps {
  reads: ReadService;
  states: StateService;
  snapshots: SnapshotService;
  limits: Limits;
  log: Logger;
}

/**
 * `conversation:read` moves the cursor (and clears the mark it names); `conversation:mute` and
 * `conversation:markUnread` change the membership's registers; `sync` answers the whole state a tab rebuilds from
 * (with the whole list or its first page), and `conversation:list` the list's next pages.
 */
export function registerUnreadHandlers(socket: TallySocket, deps: UnreadDeps): void {
  const user = socket.data.user;
  onCommand(socket, deps.log, "conversation:read", async (payload) => {
    const input = parse(readInput, payload);
    await deps.limits.consume("read", { userId: user.id });
    return deps.reads.markRead(user, input.conversationId, input.seq, input.markVersion);
  });
  onCommand(socket, deps.log, "conversation:mute", async (payload) => {
    const input = parse(muteInput, payload);
    await deps.limits.consume("state", { userId: user.id });
    return deps.states.mute(user, input.conversationId, input.muted);
  });
  onCommand(socket, deps.log, "conversation:markUnread", async (payload) => {
    const input = parse(markUnreadInput, payload);
    await deps.limits.consume("state", { userId: user.id });
    return deps.states.markUnread(user, input.conversationId);
  });
  onCommand(socket, deps.log, "sync", async (payload) => {
    // No input, or null (what a client sends for `emit("sync", undefined, ack)`): the whole list.
    const input = parse(syncInput, payload ?? {});
    return { snapshot: await limitedSnapshot(deps, user, input.limit) };
  });
  onCommand(socket, deps.log, "conversation:list", async (payload) =>
    limitedPage(deps, user, parse(listInput, payload)),
  );
}

/**
 * A page of the list after a cursor (`conversation:list`, `GET /api/conversations/list`) under the `list` limit,
 * paid before it is read: a point for each page of the client's size it may hold (200 rows cost 4), so requests
 * sent at once cannot all pass on one point each.
 */
export async function limitedPage(deps: Pick<UnreadDeps, "snapshots" | "limits">, user: UserDTO, input: ListInput) {
  await deps.limits.consume("list", { userId: user.id }, 1 + Math.floor((input.limit - 1) / CLIENT_LIST_PAGE));
  return deps.snapshots.page(user, input.before, input.limit);
}

/** A user's syncs on this instance, one at a time, per limits (one app's). */
const syncTurns = new WeakMap<Limits, ReturnType<typeof oneAtATime<number>>>();

/**
 * A snapshot (the whole list, or its first `limit` conversations) under the `sync` limit, charged by the user's
 * conversations: a big user's ids and counts are read whole whatever part of the list is answered. Its size is
 * known only once it is read, so a user's syncs run one at a time on an instance: each one's charge is counted
 * before the next is let in (syncs sent at once would otherwise all pass on one point each).
 */
export async function limitedSnapshot(deps: Pick<UnreadDeps, "snapshots" | "limits">, user: UserDTO, limit?: number) {
  let inTurn = syncTurns.get(deps.limits);
  if (!inTurn) syncTurns.set(deps.limits, (inTurn = oneAtATime<number>()));
  return inTurn(user.id, async () => {
    const subject = { userId: user.id };
    await deps.limits.consume("sync", subject);
    const snapshot = await deps.snapshots.snapshot(user, limit === undefined ? {} : { limit });
    // Every conversation of the user is read (its id, its count if any), whatever part of the list is answered.
    const size = Math.max(snapshot.conversations.length, snapshot.unread.length, snapshot.conversationIds.length);
    await deps.limits.charge("sync", subject, syncSurcharge(size));
    return snapshot;
  });
}
