import { CLIENT_LIST_PAGE } from "../../contracts/inputs.ts";
import type { Db } from "../../db/prisma.ts";
import { unreadScriptKeys } from "../../redis/keys.ts";
import type { RedisClient } from "../../redis/client.ts";
import { scripts, type ApplyPart } from "../../redis/scripts.ts";
import { createSnapshotService } from "../../unread/snapshot.service.ts";
import { createUnreadService } from "../../unread/unread.service.ts";
import { percentile, round } from "../measure.ts";
import { rng } from "../rng.ts";

/** Latencies of one kind of call: Redis' own execution time and the caller's round trip. */
export interface CallTimes {
  calls: number;
  /**
   * The call's execution inside Redis, µs: how much each call added to INFO commandstats' usec of EVALSHA and EXEC
   * (a script's or a transaction's whole time; the commands inside are counted again on their own lines).
   */
  serverP50Us: number;
  serverP99Us: number;
  serverMaxUs: number;
  /** The mean of the same (EVALSHA and EXEC usec over their calls). */
  usecPerCall: number;
  /** The caller's await, one call at a time on an otherwise idle connection, ms. */
  roundTripP50Ms: number;
  roundTripP99Ms: number;
}

export interface BigUserResult {
  conversations: number;
  /** Conversations the user's snapshot lists (unread, mentions, muted or marked). */
  listed: number;
  /** rebuild.lua creating the user's state from the database (the service's rebuild), ms. */
  rebuildMs: number;
  apply: CallTimes;
  /** The unread service's snapshot: what a sync asks Redis (a MULTI read; snapshot.lua with expiry on). */
  snapshot: CallTimes;
  /** A whole `sync` in process (the snapshot, then the conversation list and last messages from PostgreSQL), ms. */
  sync: { calls: number; p50Ms: number; p99Ms: number };
  /**
   * The sync's answer written as JSON (`JSON.stringify`, as socket.io's encoder does before it sends it), ms, and its
   * size in UTF-8 bytes: server time on the instance's event loop that the in-process sync does not include.
   */
  answer: { p50Ms: number; p99Ms: number; bytes: number };
  /**
   * The sync the web client asks for: every count, with the list's first CLIENT_LIST_PAGE conversations (in process,
   * then its JSON), and the next page after it (`conversation:list`), ms.
   */
  paged: {
    calls: number;
    limit: number;
    p50Ms: number;
    p99Ms: number;
    json: { p50Ms: number; p99Ms: number; bytes: number };
    nextPage: { p50Ms: number; p99Ms: number };
  };
  /**
   * Redis loses the user's state while `events` messages to them are still to be applied (the relay replaying them):
   * every apply finds the state missing at once. The rebuilds that read the database, the callers that joined one
   * already under way instead, and the time until every event was applied, ms.
   */
  burst: { events: number; reads: number; joined: number; ms: number };
}

/**
 * A user in `conversations` groups, set up directly in the database (every group has a few messages, most unread
 * for the user; some muted, some mentioning them, some marked unread) and rebuilt into Redis by the unread service,
 * then: `applies` apply.lua calls one at a time (new messages, some mentioning the user, reads, mutes and unmutes, on
 * conversations drawn at random), `snapshots` snapshots as a sync takes them, and `syncs` whole syncs. Each call's
 * execution time is read from Redis itself (INFO commandstats after each call; SLOWLOG would not do: it also logs
 * every command a script or transaction runs).
 */
export async function measureBigUser(opts: {
  redis: RedisClient;
  db: Db;
  conversations: number;
  applies: number;
  snapshots: number;
  syncs: number;
  /** Events in the burst after Redis lost the user's state. */
  burst: number;
}): Promise<BigUserResult> {
  const { redis, db } = opts;
  const tag = Date.now().toString(36);
  const big = await db.user.create({ data: { name: `big_${tag}` }, select: { id: true, name: true } });
  const other = await db.user.create({ data: { name: `crowd_${tag}` }, select: { id: true } });
  for (let done = 0; done < opts.conversations; done += 500) {
    const n = Math.min(500, opts.conversations - done);
    await db.conversation.createMany({
      data: Array.from({ length: n }, (_, i) => ({
        kind: "group" as const,
        title: `big ${done + i}`,
        createdById: other.id,
      })),
    });
  }
  // 1…8 messages per group; the user has read none of them in most, all in every 11th (which every 13th marks
  // unread), mutes every 10th and is mentioned in the last message of every 7th.
  await db.$executeRaw`
    UPDATE "Conversation" SET "lastSeq" = 1 + "id" % 8 WHERE "createdById" = ${other.id}`;
  await db.$executeRaw`
    INSERT INTO "Message" ("conversationId", "seq", "senderId", "clientMsgId", "content")
    SELECT c."id", s, ${other.id}::int, c."id" || ':' || s, 'hello'
    FROM "Conversation" c, generate_series(1, c."lastSeq") s WHERE c."createdById" = ${other.id}`;
  // The list's order, as tally_store_messages keeps it: the newest message's time.
  await db.$executeRaw`
    UPDATE "Conversation" c SET "lastActivityAt" = m."createdAt" FROM "Message" m
    WHERE c."createdById" = ${other.id} AND m."conversationId" = c."id" AND m."seq" = c."lastSeq"`;
  await db.$executeRaw`
    INSERT INTO "Membership" ("userId", "conversationId", "lastReadSeq", "muted", "muteVersion", "markVersion", "markAt")
    SELECT u, c."id",
      CASE WHEN u = ${big.id} AND c."id" % 11 = 0 THEN c."lastSeq" WHEN u = ${big.id} THEN 0 ELSE c."lastSeq" END,
      u = ${big.id} AND c."id" % 10 = 0, CASE WHEN u = ${big.id} AND c."id" % 10 = 0 THEN 1 ELSE 0 END,
      CASE WHEN u = ${big.id} AND c."id" % 143 = 0 THEN 1 ELSE 0 END,
      CASE WHEN u = ${big.id} AND c."id" % 143 = 0 THEN c."lastSeq" ELSE 0 END
    FROM "Conversation" c, unnest(ARRAY[${big.id}, ${other.id}]::int[]) u WHERE c."createdById" = ${other.id}`;
  await db.$executeRaw`
    INSERT INTO "Mention" ("userId", "conversationId", "seq")
    SELECT ${big.id}::int, c."id", c."lastSeq" FROM "Conversation" c
    WHERE c."createdById" = ${other.id} AND c."id" % 7 = 0 AND c."id" % 11 <> 0`;
  const rows = await db.conversation.findMany({
    where: { createdById: other.id },
    select: { id: true, lastSeq: true },
  });

  const rebuilds = { read: 0, joined: 0 };
  const unread = createUnreadService({ redis, db, onRebuild: (how) => rebuilds[how]++ });
  const began = performance.now();
  await unread.rebuild(big.id);
  const rebuildMs = round(performance.now() - began);

  const keys = unreadScriptKeys(big.id);
  const load = async (lua: string) => (await redis.script("LOAD", lua)) as string;
  // Loaded first, so every timed script call is one EVALSHA (a snapshot without expiry is one MULTI).
  await load(scripts.tallyApply.lua);
  await load(scripts.tallySnapshotExpiring.lua);

  const random = rng(7);
  const lastSeq = new Map(rows.map((r) => [r.id, r.lastSeq]));
  const muteVersion = new Map<number, number>();
  const apply = await timed(redis, opts.applies, async () => {
    const { id } = rows[Math.floor(random() * rows.length)]!;
    const dice = random();
    let seen = 0;
    let read = 0;
    const parts: ApplyPart[] = [];
    if (dice < 0.6) {
      seen = lastSeq.get(id)! + 1;
      lastSeq.set(id, seen);
      if (random() < 0.2) parts.push("mention");
    } else if (dice < 0.9) {
      read = Math.floor(random() * (lastSeq.get(id)! + 1));
    } else {
      const v = (muteVersion.get(id) ?? 1) + 1;
      muteVersion.set(id, v);
      parts.push("mute", v, v % 2);
    }
    await redis.tallyApply(...keys, id, seen, read, 0, 0, "", ...parts);
  });

  let listed = 0;
  const snapshot = await timed(redis, opts.snapshots, async () => {
    listed = (await unread.snapshot(big.id)).counts.size;
  });

  const snapshots = createSnapshotService({ db, unread });
  const syncMs: number[] = [];
  const jsonMs: number[] = [];
  let bytes = 0;
  for (let i = 0; i < opts.syncs; i++) {
    const t = performance.now();
    const answer = await snapshots.snapshot(big);
    syncMs.push(performance.now() - t);
    const j = performance.now();
    const json = JSON.stringify(answer);
    jsonMs.push(performance.now() - j);
    bytes = Buffer.byteLength(json);
  }
  syncMs.sort((a, b) => a - b);
  jsonMs.sort((a, b) => a - b);

  const paged = { sync: [] as number[], json: [] as number[], next: [] as number[], bytes: 0 };
  for (let i = 0; i < opts.syncs; i++) {
    const t = performance.now();
    const answer = await snapshots.snapshot(big, { limit: CLIENT_LIST_PAGE });
    paged.sync.push(performance.now() - t);
    const j = performance.now();
    const json = JSON.stringify(answer);
    paged.json.push(performance.now() - j);
    paged.bytes = Buffer.byteLength(json);
    const oldest = answer.conversations.at(-1)!;
    const n = performance.now();
    await snapshots.page(
      big,
      { at: oldest.lastMessage?.createdAt ?? oldest.createdAt, id: oldest.id },
      CLIENT_LIST_PAGE,
    );
    paged.next.push(performance.now() - n);
  }
  for (const list of [paged.sync, paged.json, paged.next]) list.sort((a, b) => a - b);
  const p = (list: number[], q: number) => round(percentile(list, q));

  // The burst: events the database already holds (each conversation's last message), so the state stays its truth.
  await redis.del(...keys);
  Object.assign(rebuilds, { read: 0, joined: 0 });
  const burstStart = performance.now();
  await Promise.all(
    rows
      .slice(0, opts.burst)
      .map(({ id }) => unread.applyOne({ userId: big.id, conversationId: id, seenSeq: lastSeq.get(id)!, readSeq: 0 })),
  );
  const burst = {
    events: opts.burst,
    reads: rebuilds.read,
    joined: rebuilds.joined,
    ms: round(performance.now() - burstStart),
  };

  await redis.del(...keys);
  return {
    conversations: opts.conversations,
    listed,
    rebuildMs,
    apply,
    snapshot,
    sync: { calls: opts.syncs, p50Ms: round(percentile(syncMs, 50)), p99Ms: round(percentile(syncMs, 99)) },
    answer: { p50Ms: round(percentile(jsonMs, 50)), p99Ms: round(percentile(jsonMs, 99)), bytes },
    paged: {
      calls: opts.syncs,
      limit: CLIENT_LIST_PAGE,
      p50Ms: p(paged.sync, 50),
      p99Ms: p(paged.sync, 99),
      json: { p50Ms: p(paged.json, 50), p99Ms: p(paged.json, 99), bytes: paged.bytes },
      nextPage: { p50Ms: p(paged.next, 50), p99Ms: p(paged.next, 99) },
    },
    burst,
  };
}

/** The total µs Redis has spent in EVALSHA and EXEC since the last CONFIG RESETSTAT, and their calls. */
async function callStats(redis: RedisClient): Promise<{ usec: number; calls: number }> {
  const info = (await redis.info("commandstats")) as string;
  let usec = 0;
  let calls = 0;
  for (const [, c, u] of info.matchAll(/cmdstat_(?:evalsha|exec):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(c);
    usec += Number(u);
  }
  return { calls, usec };
}

/**
 * Runs `call` `n` times one after another (each one EVALSHA or MULTI on an otherwise idle connection), timing each in
 * the caller and in Redis: the EVALSHA and EXEC time INFO commandstats gained across it.
 */
async function timed(redis: RedisClient, n: number, call: () => Promise<void>): Promise<CallTimes> {
  await redis.config("RESETSTAT");
  const roundTrips: number[] = [];
  const server: number[] = [];
  let before = await callStats(redis);
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await call();
    roundTrips.push(performance.now() - t);
    const after = await callStats(redis);
    server.push(after.usec - before.usec);
    before = after;
  }
  roundTrips.sort((a, b) => a - b);
  server.sort((a, b) => a - b);
  return {
    calls: n,
    serverP50Us: percentile(server, 50),
    serverP99Us: percentile(server, 99),
    serverMaxUs: server.at(-1) ?? 0,
    usecPerCall: before.calls > 0 ? round(before.usec / before.calls) : 0,
    roundTripP50Ms: round(percentile(roundTrips, 50), 3),
    roundTripP99Ms: round(percentile(roundTrips, 99), 3),
  };
}

export interface MentionFloodResult {
  mentions: number;
  /**
   * The unread service's rebuild of the victim from PostgreSQL (its database read and rebuild.lua): round trip in
   * ms, and Redis' own time in µs (ticket.lua and rebuild.lua).
   */
  rebuild: CallTimes;
  /** Another mention on top, apply.lua one at a time. */
  apply: CallTimes;
  /** The victim's snapshot, as a sync takes it. */
  snapshot: CallTimes;
  /** The victim reads the whole conversation: one apply.lua, which drops every mention from their set. */
  readAll: CallTimes;
}

/**
 * A user @-mentioned `mentions` times in one group, all unread (what abusers leave a victim who does not read,
 * docs/security.md, "Mention floods"), set up directly in the database: what their rebuild, their applies and
 * snapshots, and the read that clears it all cost.
 */
export async function measureMentionFlood(opts: {
  redis: RedisClient;
  db: Db;
  mentions: number;
  applies: number;
  snapshots: number;
}): Promise<MentionFloodResult> {
  const { redis, db, mentions: n } = opts;
  const tag = Date.now().toString(36);
  const victim = await db.user.create({ data: { name: `victim_${tag}` }, select: { id: true } });
  const abuser = await db.user.create({ data: { name: `abuser_${tag}` }, select: { id: true } });
  const { id } = await db.conversation.create({
    data: { kind: "group", title: `flood ${tag}`, createdById: abuser.id, lastSeq: n },
    select: { id: true },
  });
  await db.membership.createMany({ data: [victim, abuser].map((u) => ({ userId: u.id, conversationId: id })) });
  await db.$executeRaw`
    INSERT INTO "Message" ("conversationId", "seq", "senderId", "clientMsgId", "content")
    SELECT ${id}::int, s, ${abuser.id}::int, 'flood:' || s, '@victim' FROM generate_series(1, ${n}::int) s`;
  await db.$executeRaw`
    INSERT INTO "Mention" ("userId", "conversationId", "seq")
    SELECT ${victim.id}::int, ${id}::int, s FROM generate_series(1, ${n}::int) s`;

  const unread = createUnreadService({ redis, db });
  const keys = unreadScriptKeys(victim.id);
  await redis.del(...keys);
  await redis.script("LOAD", scripts.tallyApply.lua);
  await redis.script("LOAD", scripts.tallySnapshotExpiring.lua);
  const rebuild = await timed(redis, 1, async () => {
    await unread.rebuild(victim.id);
  });
  let lastSeq = n;
  const apply = await timed(redis, opts.applies, async () => {
    lastSeq++;
    await redis.tallyApply(...keys, id, lastSeq, 0, 0, 0, "", "mention");
  });
  const snapshot = await timed(redis, opts.snapshots, async () => {
    await unread.snapshot(victim.id);
  });
  const readAll = await timed(redis, 1, async () => {
    await redis.tallyApply(...keys, id, lastSeq, lastSeq, 0, 0);
  });
  const left = await redis.zcard(keys[4]);
  if (left !== 0) throw new Error(`the read left ${left} entries in the victim's mention set`);
  await redis.del(...keys);
  return { mentions: n, rebuild, apply, snapshot, readAll };
}
