import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConversationDTO } from "../contracts/index.ts";
import { nextEvent, startHarness, type Harness } from "../testing/harness.ts";

// A deployment in a database other than 0 of a shared redis-server: its instances talk on channels named after the
// database (server/redis/client.ts, channelPrefix), since Redis' pub/sub ignores the database number.
let h: Harness;
beforeAll(async () => {
  h = await startHarness(2, { redisDb: 3 });
});
afterAll(() => h.close());

describe("two instances in database 3", () => {
  it("deliver a message across instances on the database's own channels", async () => {
    const alice = await h.signUp(`alice_${Date.now().toString(36)}`);
    const bob = await h.signUp(`bob_${Date.now().toString(36)}`);
    const res = await h.http("/api/conversations", {
      method: "POST",
      token: alice.token,
      body: JSON.stringify({ memberNames: [bob.user.name] }),
    });
    const conv = res.body.conversation as ConversationDTO;
    const sender = await h.connect(alice.token, 0);
    const tab = await h.connect(bob.token, 1);
    // Both instances listen for deliveries and for the adapter on the prefixed channels, none on the bare ones.
    const numsub = async (channel: string) => Number((await h.redis.pubsub("NUMSUB", channel)).at(1));
    expect([await numsub("db3:tally:deliveries"), await numsub("tally:deliveries")]).toEqual([2, 0]);
    expect([await numsub("db3:socket.io-request#/#"), await numsub("socket.io-request#/#")]).toEqual([2, 0]);

    const pushed = Promise.all([nextEvent(tab, "message:new"), nextEvent(tab, "unread:changed")]);
    const ack = await sender.emitWithAck("message:send", {
      conversationId: conv.id,
      clientMsgId: randomUUID(),
      content: "across on db3",
    });
    expect(ack).toMatchObject({ ok: true });
    const [message, update] = await pushed;
    expect(message).toMatchObject({ message: { content: "across on db3" } });
    expect(update).toMatchObject({ conversationId: conv.id, unreadCount: 1 });
  });
});
