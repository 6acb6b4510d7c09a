import type { Socket } from "socket.io";
import type { ClientToServerEvents, InterServerEvents, ServerToClientEvents, SocketData } from "../contracts/index.ts";
import type { Limits } from "../limits/limits.ts";
import type { Logger } from "../log.ts";
import { command } from "../realtime/command.ts";
import { parse, readInput, sendInput } from "../validation.ts";
import type { Delivery } from "./delivery.ts";
import type { MessageService } from "./messages.service.ts";

export type TallySocket = Socket<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;

export function registerMessageHandlers(
  socket: TallySocket,
  deps: {
    messages: MessageService;
    delivery: Delivery;
    log: Logger;
    limits: Limits;
    fault?: "crash-after-commit";
  },
): void {
  const { messages, delivery, log, limits } = deps;
  const user = socket.data.user;

  socket.on(
    "message:send",
    command(log, "message:send", async (payload) => {
      const input = parse(sendInput, payload);
      await limits.consume("send", { userId: user.id });
      const { message, memberIds } = await messages.send(user, input);
      if (deps.fault === "crash-after-commit") {
        // Test-only: die between the database commit and Redis, as a crashed process would.
        log.warn({ messageId: message.id }, "TALLY_FAULT=crash-after-commit: killing this process");
        process.kill(process.pid, "SIGKILL");
      }
      // Also on a retried send: the first attempt may have stopped between the commit and the counters.
      await delivery.deliverMessage(message, memberIds);
      return { message };
    }),
  );

  socket.on(
    "conversation:read",
    command(log, "conversation:read", async (payload) => {
      const input = parse(readInput, payload);
      await limits.consume("read", { userId: user.id });
      const { cursor, lastSeq } = await messages.markRead(user, input.conversationId, input.seq);
      return delivery.deliverRead(user.id, input.conversationId, cursor, lastSeq);
    }),
  );
}
