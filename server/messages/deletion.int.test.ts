import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MessageDTO } from "../contracts/index.ts";
import { userKeys } from "../redis/keys.ts";
import { nextEvent, startHarness, type ClientSocket, type Harness } from "../testing/harness.ts";
import { testApi } from "../testing/api.ts";
import { reconcile } from "../unread/reconcile.ts";
import { createUnreadService } from "../unread/unread.service.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness(2);
});
afterAll(() => h.close());

const { user, create, send, list } = testApi(() => h);

const deleteMessage = (s: ClientSocket, payload: unknown) => s.emitWithAck("message:delete", payload as never);

/** Sends and returns the stored message. */
async function sent(s: ClientSocket, conversationId: number, content: string): Promise<MessageDTO> {
  const res = await send(s, conversationId, content);
  if (!res.ok) throw new Error(res.error.message);
  return res.message;
}

const drift = () => reconcile({ db: h.db, unread: createUnreadService({ redis: h.redis, db: h.db }) });

const history = async (token: string, conversationId: number) =>
  (await h.http(`/api/conversations/${conversationId}/messages`, { token })).body.messages as MessageDTO[];

describe("deleting a message", () => {
  it("takes it out of every member's count and mentions, tells every tab, and keeps it deleted", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name, cat.user.name], "Oops");
    const annTab = await h.connect(ann.token, 0);
    await sent(annTab, group.id, "one");
    const oops = await sent(annTab, group.id, `@${ben.user.name} wrong person, sorry`);
    await sent(annTab, group.id, "three");
    await expect.poll(async () => (await list(ben.token)).totalUnread).toBe(3);
    expect(await list(ben.token)).toMatchObject({ totalMentions: 1 });

    const benTab = await h.connect(ben.token, 1);
    const annOtherTab = await h.connect(ann.token, 1);
    const benHears = nextEvent(benTab, "message:deleted");
    const benCount = nextEvent(benTab, "unread:changed", (u) => u.conversationId === group.id);
    const annHears = nextEvent(annOtherTab, "message:deleted");
    const res = await deleteMessage(annTab, { messageId: oops.id });
    expect(res).toMatchObject({ ok: true, changed: true });
    if (!res.ok) return;
    expect(res.message).toMatchObject({ id: oops.id, seq: oops.seq, content: "", deleted: true });
    expect((await benHears).message).toEqual(res.message);
    expect((await annHears).message.id).toBe(oops.id);
    expect(await benCount).toMatchObject({ unreadCount: 2, mentionCount: 0, totalUnread: 2, totalMentions: 0 });
    expect(await list(cat.token)).toMatchObject({ totalUnread: 2 });

    // Its text is gone from the database and from history; its place (seq) stays.
    const stored = await h.db.message.findUniqueOrThrow({ where: { id: oops.id } });
    expect(stored.content).toBe("");
    expect(stored.deletedAt).not.toBeNull();
    expect(await h.db.mention.count({ where: { conversationId: group.id } })).toBe(0);
    expect((await history(cat.token, group.id)).map((m) => [m.seq, m.content, m.deleted ?? false])).toEqual([
      [1, "one", false],
      [2, "", true],
      [3, "three", false],
    ]);

    // Again: answered as it is, nothing written, nothing pushed.
    const entries = await h.db.outboxEvent.count({ where: { kind: "deletion" } });
    expect(await deleteMessage(annTab, { messageId: oops.id })).toMatchObject({ ok: true, changed: false });
    expect(await h.db.outboxEvent.count({ where: { kind: "deletion" } })).toBeLessThanOrEqual(entries);

    // Reading up to 1 passes the deleted 2 (nothing to see there): one left, and reading 3 leaves none.
    const read = await benTab.emitWithAck("conversation:read", { conversationId: group.id, seq: 1 });
    expect(read).toMatchObject({ ok: true, unread: { unreadCount: 1, totalUnread: 1 } });
    await benTab.emitWithAck("conversation:read", { conversationId: group.id, seq: 3 });
    expect(await list(ben.token)).toMatchObject({ totalUnread: 0, totalMentions: 0 });
    await expect.poll(() => h.db.outboxEvent.count({ where: { conversationId: group.id } })).toBe(0);
    expect(await drift()).toMatchObject({ drifted: 0 });
  });

  it("is the last message of the list deleted: the row's preview says so, and a newcomer counts nothing of it", async () => {
    const [ann, ben, cat] = [await user("ann"), await user("ben"), await user("cat")];
    const group = await create(ann.token, [ben.user.name], "Preview");
    const annTab = await h.connect(ann.token, 0);
    await sent(annTab, group.id, "kept");
    const last = await sent(annTab, group.id, "taken back");
    await deleteMessage(annTab, { messageId: last.id });
    const row = (await list(ben.token)).conversations.find((c) => c.id === group.id);
    expect(row).toMatchObject({ unreadCount: 1, lastMessage: { id: last.id, content: "", deleted: true } });
    await list(cat.token);
    const added = await h.http(`/api/conversations/${group.id}/members`, {
      method: "POST",
      token: ben.token,
      body: JSON.stringify({ memberNames: [cat.user.name] }),
    });
    expect(added.status).toBe(200);
    expect(await list(cat.token)).toMatchObject({ totalUnread: 0 });
  });

  it("moves nobody's cursor: a conversation marked unread stays marked when someone else's new message is deleted", async () => {
    const [ann, ben] = [await user("ann"), await user("ben")];
    const direct = await create(ann.token, [ben.user.name]);
    const annTab = await h.connect(ann.token, 0);
    const benTab = await h.connect(ben.token, 1);
    await sent(annTab, direct.id, "read this");
    await benTab.emitWithAck("conversation:read", { conversationId: direct.id, seq: 1 });
    expect(await benTab.emitWithAck("conversation:markUnread", { conversationId: direct.id })).toMatchObject({
      ok: true,
      unread: { unreadCount: 1, markedUnread: true },
    });
    const slip = await sent(annTab, direct.id, "sent too soon");
    expect(await deleteMessage(annTab, { messageId: slip.id })).toMatchObject({ ok: true, changed: true });
    expect(await list(ben.token)).toMatchObject({ totalUnread: 1 });
    const row = (await list(ben.token)).conversations.find((c) => c.id === direct.id);
    expect(row).toMatchObject({ unreadCount: 1, markedUnread: true, lastReadSeq: 1 });
    // Still marked in the database too: marking again changes nothing; reading to the end clears it.
    expect(await benTab.emitWithAck("conversation:markUnread", { conversationId: direct.id })).toMatchObject({
      ok: true,
      changed: false,
    });
    await benTab.emitWithAck("conversation:read", { conversationId: direct.id, seq: 2, markVersion: 1 });
    expect(await list(ben.token)).toMatchObject({ totalUnread: 0 });
    expect(await drift()).toMatchObject({ drifted: 0 });
  });

  it("refuses with a typed error and changes nothing: bad input, someone else's message, a conversation not theirs", async () => {
    const [ann, ben, eve] = [await user("ann"), await user("ben"), await user("eve")];
    const direct = await create(ann.token, [ben.user.name]);
    const annTab = await h.connect(ann.token, 0);
    const benTab = await h.connect(ben.token, 1);
    const eveTab = await h.connect(eve.token, 0);
    const message = await sent(annTab, direct.id, "mine");
    await expect.poll(async () => (await list(ben.token)).totalUnread).toBe(1);

    for (const bad of [{}, { messageId: "1" }, { messageId: 0 }, { messageId: 1.5 }, { messageId: 1, extra: 1 }, null])
      expect(await deleteMessage(annTab, bad), JSON.stringify(bad)).toMatchObject({
        ok: false,
        error: { code: "invalid" },
      });
    expect(await deleteMessage(benTab, { messageId: message.id })).toMatchObject({
      ok: false,
      error: { code: "forbidden", message: "You can delete only your own messages." },
    });
    // Someone outside the conversation learns nothing: the same answer as for an id that is no message.
    for (const messageId of [message.id, 2_000_000_000])
      expect(await deleteMessage(eveTab, { messageId })).toMatchObject({ ok: false, error: { code: "not_found" } });

    const stored = await h.db.message.findUniqueOrThrow({ where: { id: message.id } });
    expect([stored.content, stored.deletedAt]).toEqual(["mine", null]);
    expect(await list(ben.token)).toMatchObject({ totalUnread: 1 });
  });

  it("a deletion the counters never heard (the instance died at its commit) is replayed by the relay, and a rebuild counts it out too", async () => {
    const [ann, ben] = [await user("ann"), await user("ben")];
    const group = await create(ann.token, [ben.user.name], "Replayed deletion");
    const annTab = await h.connect(ann.token, 0);
    const messages = [];
    for (const text of ["a", `@${ben.user.name} b`, "c", "d"]) messages.push(await sent(annTab, group.id, text));
    await expect.poll(async () => (await list(ben.token)).totalUnread).toBe(4);
    const [, second, third] = messages;

    // What the deletion's transaction writes, with nothing after it.
    await h.db.$transaction([
      h.db.message.update({ where: { id: second!.id }, data: { content: "", deletedAt: new Date() } }),
      h.db.mention.deleteMany({ where: { conversationId: group.id, seq: second!.seq } }),
      h.db.outboxEvent.create({
        data: { kind: "deletion", conversationId: group.id, userId: ann.user.id, seq: second!.seq },
      }),
    ]);
    expect(await list(ben.token)).toMatchObject({ totalUnread: 4, totalMentions: 1 });
    const benTab = await h.connect(ben.token, 1);
    const told = nextEvent(benTab, "message:deleted");
    expect(await h.instances[1]!.app.relay.runOnce(0)).toMatchObject({ failed: 0 });
    expect((await told).message).toMatchObject({ id: second!.id, deleted: true });
    expect(await list(ben.token)).toMatchObject({ totalUnread: 3, totalMentions: 0 });

    // Redis loses ben's counters: the rebuild reads the deleted seqs above his cursor as it reads his own.
    expect(await deleteMessage(annTab, { messageId: third!.id })).toMatchObject({ ok: true, changed: true });
    await h.redis.del(...Object.values(userKeys(ben.user.id)));
    expect(await list(ben.token)).toMatchObject({ totalUnread: 2, totalMentions: 0 });
    expect(await drift()).toMatchObject({ drifted: 0 });
  });
});
