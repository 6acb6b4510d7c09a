import type { Db } from "../../db/prisma.ts";
import { createSessionService } from "../../sessions/sessions.service.ts";
import { percentile, round } from "../measure.ts";
import { connect } from "./send-to-badge.ts";
import type { Instance } from "./services.ts";

export interface SyncAbuseRow {
  label: string;
  /** `sync` calls the abuser made in the window, and how many the server answered with a snapshot. */
  syncs: number;
  syncsServed: number;
  healthP50Ms: number;
  healthP99Ms: number;
  /** p50 and p99 of health during the abuse over the same when idle. */
  slowdown: number;
  slowdownP99: number;
}

export interface SyncAbuseResult {
  conversations: number;
  /** One `sync` of the abuser, measured alone (server time plus one loopback round trip). */
  syncP50Ms: number;
  idle: { healthP50Ms: number; healthP99Ms: number };
  rows: SyncAbuseRow[];
}

/** Sequential GET /api/health for `ms`; returns each latency in ms. */
/** Sorted ascending, as `percentile` wants them. */
async function healthLatencies(url: string, ms: number): Promise<number[]> {
  const out: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const t = performance.now();
    const res = await fetch(`${url}/api/health`);
    await res.arrayBuffer();
    out.push(performance.now() - t);
  }
  return out.sort((a, b) => a - b);
}

/**
 * The abuse this measures: a user put into thousands of groups by others, calling `sync` in a loop from one
 * socket, slowed every other user down. Measures another client's /api/health latency idle and during such a
 * loop, against each given instance (one with the default limits, one with the limits lifted).
 */
export async function measureSyncAbuse(opts: {
  db: Db;
  instances: { label: string; instance: Instance }[];
  conversations: number;
  seconds: number;
}): Promise<SyncAbuseResult> {
  const { db } = opts;
  const tag = Date.now().toString(36);
  const abuser = await db.user.create({ data: { name: `abuser_${tag}` }, select: { id: true } });
  const other = await db.user.create({ data: { name: `grouper_${tag}` }, select: { id: true } });
  // The groups: created in bulk, the way thousands of invitations would have left them.
  for (let done = 0; done < opts.conversations; done += 500) {
    const n = Math.min(500, opts.conversations - done);
    const created = await db.conversation.createManyAndReturn({
      data: Array.from({ length: n }, (_, i) => ({
        kind: "group" as const,
        title: `spam ${done + i}`,
        createdById: other.id,
      })),
      select: { id: true },
    });
    await db.membership.createMany({
      data: created.flatMap((c) => [
        { userId: abuser.id, conversationId: c.id },
        { userId: other.id, conversationId: c.id },
      ]),
    });
  }
  const { token } = await createSessionService({ db }).createSession(abuser.id);

  const first = opts.instances[0]!.instance;
  // Timed where limits are lifted: with them a user this big gets one sync per window.
  const warm = await connect(opts.instances.at(-1)!.instance.url, token);
  const single: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    await warm.timeout(60_000).emitWithAck("sync");
    single.push(performance.now() - t);
  }
  warm.disconnect();
  single.sort((a, b) => a - b);
  // Let the lifted limits' short window that the measurement above opened close before the limited run.
  await new Promise((r) => setTimeout(r, 2000));

  const idle = await healthLatencies(first.url, opts.seconds * 1000);
  const rows: SyncAbuseRow[] = [];
  for (const { label, instance } of opts.instances) {
    const socket = await connect(instance.url, token);
    let stop = false;
    let syncs = 0;
    let served = 0;
    const loop = (async () => {
      while (!stop) {
        syncs++;
        const res = await socket.timeout(60_000).emitWithAck("sync");
        if (res.ok) served++;
      }
    })();
    const during = await healthLatencies(instance.url, opts.seconds * 1000);
    stop = true;
    await loop.catch(() => undefined);
    socket.disconnect();
    rows.push({
      label,
      syncs,
      syncsServed: served,
      healthP50Ms: round(percentile(during, 50)),
      healthP99Ms: round(percentile(during, 99)),
      slowdown: round(percentile(during, 50) / percentile(idle, 50)),
      slowdownP99: round(percentile(during, 99) / percentile(idle, 99)),
    });
  }
  return {
    conversations: opts.conversations,
    syncP50Ms: round(percentile(single, 50)),
    idle: { healthP50Ms: round(percentile(idle, 50)), healthP99Ms: round(percentile(idle, 99)) },
    rows,
  };
}
