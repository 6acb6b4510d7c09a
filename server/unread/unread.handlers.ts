import type { UserDTO } from "../contracts/index.ts";
import { markUnreadInput, muteInput, readInput } from "../contracts/inputs.ts";
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
 * `conversation:markUnread` change the membership's registers; `sync` answers the whole state a tab rebuilds from.
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
  onCommand(socket, deps.log, "sync", async () => ({ snapshot: await limitedSnapshot(deps, user) }));
}

/** A snapshot under the `sync` limit, charged by its size: big conversation lists cost more of it. */
export async function limitedSnapshot(deps: Pick<UnreadDeps, "snapshots" | "limits">, user: UserDTO) {
  const subject = { userId: user.id };
  await deps.limits.consume("sync", subject);
  const snapshot = await deps.snapshots.snapshot(user);
  await deps.limits.charge("sync", subject, syncSurcharge(snapshot.conversations.length));
  return snapshot;
}
