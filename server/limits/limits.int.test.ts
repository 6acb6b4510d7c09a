import { afterAll, describe, expect, inject, it } from "vitest";
import { Redis } from "ioredis";
import { AppError } from "../errors.ts";
import { redisTarget } from "../redis/client.ts";
import { limitSubject } from "../redis/keys.ts";
import { createLimits, defaultLimits, type LimitRules } from "./limits.ts";

/**
 * The send limit's leases against a real redis-server: what Redis counts, what each instance serves. Each test
 * uses users of its own; their keys are deleted afterwards.
 */
const target = redisTarget(inject("redisTarget"));
if (!("url" in target)) throw new Error("this file runs on one redis-server");
const redis = new Redis(target.url);
const created: string[] = [];
afterAll(async () => {
  if (created.length > 0) await redis.del(...created);
  await redis.quit();
});

let nextUser = 2_000_000_000 + Math.floor(Math.random() * 100_000_000);
/** A user id no other test uses, and the Redis key its send limit counts in. */
function freshUser(): { userId: number; key: string } {
  const userId = nextUser++;
  const key = `rl:send:${limitSubject({ userId })}`;
  created.push(key);
  return { userId, key };
}

const rules = (sendPoints: number): LimitRules => ({ ...defaultLimits, send: { points: sendPoints, durationS: 600 } });
const counted = async (key: string) => Number(await redis.get(key));

/** Tries `n` sends one after another; how many were served (the rest were refused with `rate_limited`). */
async function served(consume: () => Promise<void>, n: number): Promise<number> {
  let ok = 0;
  for (let i = 0; i < n; i++) {
    try {
      await consume();
      ok++;
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      expect(err).toMatchObject({ code: "rate_limited" });
    }
  }
  return ok;
}

describe("the send limit's leases", () => {
  it("takes four points at a time from Redis and hands them out from memory", async () => {
    const limits = createLimits({ redis, rules: rules(60) });
    const { userId, key } = freshUser();
    await limits.consume("send", { userId });
    expect(await counted(key)).toBe(4);
    for (let i = 0; i < 3; i++) await limits.consume("send", { userId });
    expect(await counted(key)).toBe(4);
    await limits.consume("send", { userId });
    expect(await counted(key)).toBe(8);
  });

  it("leases once for sends of one subject that arrive together", async () => {
    const limits = createLimits({ redis, rules: rules(60) });
    const { userId, key } = freshUser();
    await Promise.all(Array.from({ length: 4 }, () => limits.consume("send", { userId })));
    expect(await counted(key)).toBe(4);
    await Promise.all(Array.from({ length: 5 }, () => limits.consume("send", { userId })));
    expect(await counted(key)).toBe(12);
  });

  it("serves a subject's calls in the order they came, the one that leased first", async () => {
    const limits = createLimits({ redis, rules: rules(60) });
    const { userId } = freshUser();
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, (_, i) => limits.consume("send", { userId }).then(() => void order.push(i))),
    );
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("gives a refusal to the call that asked, and the calls behind it ask again", async () => {
    const limits = createLimits({ redis, rules: rules(2) });
    const { userId } = freshUser();
    const results = await Promise.allSettled(Array.from({ length: 4 }, () => limits.consume("send", { userId })));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "rejected"]);
  });

  it("serves no more than the window's points over two instances; the last lease is what was left", async () => {
    const a = createLimits({ redis, rules: rules(10) });
    const b = createLimits({ redis, rules: rules(10) });
    const { userId, key } = freshUser();
    let total = 0;
    for (let round = 0; round < 8; round++) {
      total += await served(() => a.consume("send", { userId }), 1);
      total += await served(() => b.consume("send", { userId }), 1);
    }
    expect(total).toBe(10);
    expect(await counted(key)).toBeGreaterThanOrEqual(10);
    // Over for both, with a retry hint.
    await expect(a.consume("send", { userId })).rejects.toMatchObject({
      code: "rate_limited",
      retryAfterMs: expect.any(Number),
    });
  });

  it("serves exactly the points when one instance takes them all, the partial lease included", async () => {
    const limits = createLimits({ redis, rules: rules(10) });
    const { userId, key } = freshUser();
    expect(await served(() => limits.consume("send", { userId }), 14)).toBe(10);
    expect(await counted(key)).toBe(12);
  });

  it("ends a lease with the window Redis reported: points left in it are not served after", async () => {
    let clock = 1_000_000;
    const limits = createLimits({ redis, rules: rules(60), now: () => clock });
    const { userId, key } = freshUser();
    await limits.consume("send", { userId });
    await limits.consume("send", { userId });
    expect(await counted(key)).toBe(4);
    clock += 600_001; // past the window's end as leased (Redis' own window is still open: it runs on real time)
    await limits.consume("send", { userId });
    expect(await counted(key)).toBe(8);
  });

  it("counts each call in Redis for limits that lease nothing, and for sends with leases off", async () => {
    const limits = createLimits({ redis, rules: rules(60), leased: {} });
    const { userId, key } = freshUser();
    await limits.consume("send", { userId });
    await limits.consume("send", { userId });
    expect(await counted(key)).toBe(2);
  });

  it("tells a person refused for most of an hour when to try again, not 'later'", async () => {
    const limits = createLimits({ redis, rules: { ...defaultLimits, signUp: { points: 1, durationS: 3600 } } });
    const address = `203.0.113.${Math.floor(Math.random() * 250)}`;
    created.push(`rl:signUp:${limitSubject({ address })}`);
    await limits.consume("signUp", { address });
    const refusal = await limits.consume("signUp", { address }).catch((err: unknown) => err);
    expect(refusal).toMatchObject({
      code: "rate_limited",
      message: expect.stringMatching(/^Too many new accounts from this address; try again in (59|60) minutes\.$/),
    });
    expect((refusal as AppError).retryAfterMs).toBeGreaterThan(59 * 60_000);
  });
});
