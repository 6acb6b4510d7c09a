import { syncSurcharge, type Limits } from "../limits/limits.ts";
import type { Logger } from "../log.ts";
import type { TallySocket } from "../messages/messages.handlers.ts";
import { command } from "../realtime/command.ts";
import type { Notifier } from "../realtime/notifier.ts";
import type { UserDTO } from "../contracts/index.ts";
import { createConversationInput, parse } from "../validation.ts";
import type { ConversationService } from "./conversations.service.ts";

export function registerConversationHandlers(
  socket: TallySocket,
  deps: { conversations: ConversationService; limits: Limits; log: Logger },
): void {
  socket.on(
    "sync",
    command(deps.log, "sync", async () => {
      return { snapshot: await limitedSnapshot(deps, socket.data.user) };
    }),
  );
}

/** A snapshot under the `sync` limit, charged by its size: big conversation lists cost more of it. */
export async function limitedSnapshot(deps: { conversations: ConversationService; limits: Limits }, user: UserDTO) {
  const subject = { userId: user.id };
  await deps.limits.consume("sync", subject);
  const snapshot = await deps.conversations.snapshot(user);
  await deps.limits.charge("sync", subject, syncSurcharge(snapshot.conversations.length));
  return snapshot;
}

/** Creates (or finds) a conversation and tells every member's tabs when it is new. */
export async function createConversation(
  deps: { conversations: ConversationService; notifier: Notifier; limits: Limits },
  user: UserDTO,
  body: unknown,
) {
  const input = parse(createConversationInput, body);
  await deps.limits.consume("create", { userId: user.id });
  // Adding people to groups nobody asked to join is the abuse to bound: each member of a new group counts.
  if (input.memberNames.length > 1 || input.title) {
    await deps.limits.consume("groupAdd", { userId: user.id }, input.memberNames.length);
  }
  const { conversationId, created, memberIds } = await deps.conversations.create(user, input);
  if (created) {
    await Promise.all(
      memberIds.map(async (memberId) =>
        deps.notifier.conversationCreated(memberId, await deps.conversations.describe(conversationId, memberId)),
      ),
    );
  }
  return { conversation: await deps.conversations.describe(conversationId, user.id) };
}
