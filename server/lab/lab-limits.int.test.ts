/**
 * The lab's own limits, on a harness of their own (a cap of 3 sockets, 2 replays or bot starts per user): another
 * harness in the same file would share its Redis, and with it the adapter's rooms of users with the same ids.
 */
import type { Socket } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LabClientToServerEvents, LabServerToClientEvents } from "../contracts/lab.ts";
import { connectSocket, startHarness, type Harness } from "../testing/harness.ts";

type LabSocket = Socket<LabServerToClientEvents, LabClientToServerEvents>;

describe("the lab's limits", () => {
  let limited: Harness;
  const own: LabSocket[] = [];
  beforeAll(async () => {
    limited = await startHarness(1, { maxSocketsPerUser: 3, limits: { lab: { points: 2, durationS: 600 } } });
  });
  afterAll(async () => {
    for (const s of own) s.disconnect();
    await limited.close();
  });
  const socketTo = (token: string) => connectSocket<LabSocket>(`${limited.instances[0]!.url}/lab`, token, own);

  it("caps a user's /lab sockets as it caps the chat's, however many open at once", async () => {
    const { token } = await limited.signUp("lab_cap");
    const opened = await Promise.allSettled(Array.from({ length: 12 }, () => socketTo(token)));
    expect(opened.filter((o) => o.status === "fulfilled")).toHaveLength(3);
    for (const o of opened) {
      if (o.status === "rejected") expect(o.reason).toMatchObject({ data: { code: "rate_limited" } });
    }
  });

  it("limits replays and bot starts per user, and answers an unknown command with not_found", async () => {
    const { token } = await limited.signUp("lab_limit");
    const lab = await socketTo(token);
    expect(await lab.emitWithAck("lab:replay", { scenario: "race" })).toMatchObject({ ok: true });
    expect(await lab.emitWithAck("bots:start", { rate: 0.1, count: 1 })).toMatchObject({ ok: true });
    expect(await lab.emitWithAck("lab:replay", { scenario: "crash" })).toMatchObject({
      ok: false,
      error: { code: "rate_limited", retryAfterMs: expect.any(Number) },
    });
    expect(await lab.emitWithAck("bots:start", { rate: 0.1, count: 1 })).toMatchObject({
      ok: false,
      error: { code: "rate_limited" },
    });
    expect(await lab.emitWithAck("bots:stop")).toMatchObject({ ok: true, bots: { running: false } });
    expect(await (lab as unknown as Socket).timeout(5000).emitWithAck("lab:delete", {})).toEqual({
      ok: false,
      error: { code: "not_found", message: "There is no such command." },
    });
  });
});
