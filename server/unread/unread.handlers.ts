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
    const input = parse(syncInput, payload === undefined ? {} : payload);
    return { snapshot: await limitedSnapshot(deps, user, input.limit) };
  });
  onCommand(socket, deps.log, "conversation:list", async (payload) =>
    limitedPage(deps, user, parse(listInput, payload)),
  );
}

/** A page of the list after a cursor (`conversation:list`, `GET /api/conversations/list`) under the `list` limit. */
export async function limitedPage(deps: Pick<UnreadDeps, "snapshots" | "limits">, user: UserDTO, input: ListInput) {
  const subject = { userId: user.id };
  await deps.limits.consume("list", subject);
  const page = await deps.snapshots.page(user, input.before, input.limit);
  // A point more for each full page of the client's size past the first: 200 rows cost 4 pages' worth.
  await deps.limits.charge("list", subject, Math.floor((page.conversations.length - 1) / CLIENT_LIST_PAGE));
  return page;
}

/**
 * A snapshot (the whole list, or its first `limit` conversations) under the `sync` limit, charged by the user's
 * conversations: a big user's ids and counts are read whole whatever part of the list is answered.
 */
export async function limitedSnapshot(deps: Pick<UnreadDeps, "snapshots" | "limits">, user: UserDTO, limit?: number) {
  const subject = { userId: user.id };
  await deps.limits.consume("sync", subject);
  const snapshot = await deps.snapshots.snapshot(user, limit === undefined ? {} : { limit });
  // Every conversation of the user is read (its id, its count if any), whatever part of the list is answered.
  const size = Math.max(snapshot.conversations.length, snapshot.unread.length, snapshot.conversationIds.length);
  await deps.limits.charge("sync", subject, syncSurcharge(size));
  return snapshot;
}
