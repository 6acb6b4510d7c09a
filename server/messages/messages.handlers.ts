import type { MessagesResponse, UserDTO } from "../contracts/index.ts";
import { conversationIdParam, deleteMessageInput, historyQuery, sendInput } from "../contracts/inputs.ts";
import { parse } from "../errors.ts";
import type { Limits } from "../limits/limits.ts";
import type { Logger } from "../log.ts";
import { since, type SendStage } from "../metrics/metrics.ts";
import { onCommand } from "../realtime/command.ts";
import type { TallySocket } from "../realtime/types.ts";
import type { DeletionService } from "./deletion.ts";
import type { MessageFanout } from "./fanout.ts";
import type { MessageService } from "./messages.service.ts";

export interface MessageDeps {
  messages: MessageService;
  fanout: MessageFanout;
  deletions: DeletionService;
  limits: Limits;
  log: Logger;
  /** Test-only: kill the process right after a send commits, before Redis sees it. */
  fault?: "crash-after-commit";
  /** Where the time of each stage goes (the /metrics histogram). */
  observe?: (stage: SendStage, seconds: number) => void;
}

/**
 * `message:send`: validate, limit, store durably, then fan out (a retried send fans out again, harmlessly).
 * `message:delete`: validate, limit, delete durably, then tell the counters and tabs (server/messages/deletion.ts).
 */
export function registerMessageHandlers(socket: TallySocket, deps: MessageDeps): void {
  const user = socket.data.user;
  onCommand(socket, deps.log, "message:send", async (payload) => {
    const input = parse(sendInput, payload);
    await deps.limits.consume("send", { userId: user.id });
    const start = process.hrtime.bigint();
    const { message, memberIds, mentionedIds, outboxId, floors } = await deps.messages.send(user, input);
    deps.observe?.("commit", since(start));
    if (deps.fault === "crash-after-commit") {
      // Test-only: die between the database commit and Redis, as a crashed process would.
      deps.log.warn({ messageId: message.id }, "TALLY_FAULT=crash-after-commit: killing this process");
      process.kill(process.pid, "SIGKILL");
    }
    // Also on a retried send: the first attempt may have stopped between the commit and the counters.
    await deps.fanout.deliver(message, memberIds, mentionedIds, outboxId, floors);
    return { message };
  });
  onCommand(socket, deps.log, "message:delete", async (payload) => {
    const input = parse(deleteMessageInput, payload);
    await deps.limits.consume("deleteMessage", { userId: user.id });
    return deps.deletions.deleteMessage(user, input.messageId);
  });
}

/** `GET /api/conversations/:id/messages`: a page of history, members only. */
export async function historyPage(
  deps: Pick<MessageDeps, "messages" | "limits">,
  user: UserDTO,
  idParam: unknown,
  query: unknown,
): Promise<MessagesResponse> {
  const conversationId = parse(conversationIdParam, idParam);
  const page = parse(historyQuery, query);
  await deps.limits.consume("history", { userId: user.id }, page.limit);
  const messages = await deps.messages.history(user, conversationId, page);
  const [left, added] = await Promise.all([deps.messages.left(conversationId), deps.messages.added(conversationId)]);
  return { messages, left, added };
}
