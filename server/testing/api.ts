import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import type { ConversationDTO, Snapshot } from "../contracts/index.ts";
import type { ClientSocket, Harness } from "./harness.ts";

/**
 * The API calls integration tests make over and over, through instance 0 of the harness `current()` returns (a
 * getter, since a file declares these helpers before its beforeAll starts the harness).
 */
export function testApi(current: () => Harness) {
  let n = 0;
  return {
    /** A new account whose name starts with `base` (unique across the run). */
    user: (base: string) => current().signUp(`${base}_${Date.now().toString(36)}${n++}`),

    /** A direct conversation (one other member) or a group, created by the token's user. */
    async create(token: string, memberNames: string[], title?: string): Promise<ConversationDTO> {
      const res = await current().http("/api/conversations", {
        method: "POST",
        token,
        body: JSON.stringify({ memberNames, title }),
      });
      expect(res.status).toBe(200);
      return res.body.conversation as ConversationDTO;
    },

    send: (s: ClientSocket, conversationId: number, content = "hi", clientMsgId = randomUUID()) =>
      s.emitWithAck("message:send", { conversationId, clientMsgId, content }),

    /** The token's user's conversations and totals, as the page loads them. */
    async list(token: string): Promise<Snapshot> {
      const res = await current().http("/api/conversations", { token });
      expect(res.status).toBe(200);
      return res.body as Snapshot;
    },
  };
}
