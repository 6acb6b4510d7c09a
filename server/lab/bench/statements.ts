import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { createDb, type Db } from "../../db/prisma.ts";
import { startThrowawayServices } from "../../embedded/services.ts";
import { createMessageService } from "../../messages/messages.service.ts";
import { percentile } from "../measure.ts";
import { clockTicksPerSecond, readProcesses, treeTicks } from "./cpu.ts";

/** One row of pg_stat_statements, as the profile reads it. */
export interface StatementStat {
  /** false: run from inside a function (here: a statement of tally_store_messages, or a foreign key check). */
  toplevel: boolean;
  calls: number;
  /** ms, summed over the calls (ExecutorRun and ExecutorFinish: not the executor's setup and teardown). */
  totalExecMs: number;
  query: string;
}

/** A statement's share of a send. */
export interface StatementRow {
  label: string;
  /** Calls per send (1 for a statement run once per message; less for one run once per call of a group). */
  perSend: number;
  /** Execution µs per send. */
  usPerSend: number;
  /** Nested inside another row's time (a foreign key check runs inside the insert that fires it). */
  nested: boolean;
}

export interface StatementProfile {
  /** How the sends were made: one at a time (groups of one), or `concurrency` at once on as many conversations. */
  concurrency: number;
  sends: number;
  /** Calls of tally_store_messages: sends / calls is the mean group. */
  calls: number;
  /** The whole call's execution per send, µs (the top-level statement in pg_stat_statements). */
  callUsPerSend: number;
  /** The statements inside the function, each per send, the costliest first. */
  statements: StatementRow[];
  /** The call's execution not counted in any statement (PL/pgSQL, and each statement's executor setup and teardown). */
  unattributedUsPerSend: number;
  /** CPU of every PostgreSQL process per send (/proc), µs; null without /proc. */
  cpuUsPerSend: number | null;
}

/**
 * A lone send's commit as the sender waits for it: the message service's call (its group of one, the prepared call,
 * the durable commit), timed from the call to its answer, one send `gapMs` after the one before had its answer.
 */
export interface LoneCommit {
  gapMs: number;
  sends: number;
  p50Ms: number;
  p99Ms: number;
}

export interface StatementsResult {
  profiles: StatementProfile[];
  /** Absent when not asked for (`paced`). */
  loneCommit?: LoneCommit;
}

/** What each statement of tally_store_messages does, recognised by its text. */
const LABELS: [RegExp, string | ((m: RegExpExecArray) => string)][] = [
  [/^DELETE FROM "OutboxEvent"/, "outbox entries completed since the last call, deleted (once a call)"],
  [/^EXISTS \(SELECT .* FROM "Message"/, "duplicate check (sender, clientMsgId)"],
  [/^UPDATE "Conversation"/, "next seq, membership and block checked (locks the conversation's row)"],
  [/JOIN "Block" b/, "who blocked whom (refused sends only)"],
  [/^INSERT INTO "Message"/, "the message (its foreign key checks included)"],
  [
    /FROM ONLY "public"\."(\w+)" x WHERE .* FOR KEY SHARE/,
    (m) => `foreign key check: "${m[1]}" (inside the message's)`,
  ],
  [/^UPDATE "Membership"/, "the sender's read cursor"],
  [/^INSERT INTO "OutboxEvent"/, "the outbox entry"],
  [/array_agg\(mb\."userId"/, "the members' ids"],
];

function labelOf(query: string): { label: string; nested: boolean } {
  const text = query.replace(/\s+/g, " ").trim();
  for (const [pattern, label] of LABELS) {
    const m = pattern.exec(text);
    if (m) return { label: typeof label === "string" ? label : label(m), nested: /FOR KEY SHARE/.test(text) };
  }
  return { label: text.length > 70 ? `${text.slice(0, 69)}…` : text, nested: false };
}

/**
 * pg_stat_statements' rows over a window of `sends` into the profile's figures: the call of tally_store_messages
 * (the top-level statement naming it), each statement inside it, and what the call spent outside its statements.
 */
export function profileOf(
  stats: StatementStat[],
  opts: { concurrency: number; sends: number; cpuUs: number | null },
): StatementProfile {
  const { sends } = opts;
  const perSend = (ms: number) => (ms * 1000) / sends;
  const call = stats.find((s) => s.toplevel && s.query.includes("tally_store_messages("));
  const statements = stats
    .filter((s) => !s.toplevel && s.calls > 0)
    .map((s) => ({ ...labelOf(s.query), perSend: s.calls / sends, usPerSend: perSend(s.totalExecMs) }))
    .sort((a, b) => b.usPerSend - a.usPerSend);
  const callUs = call ? perSend(call.totalExecMs) : 0;
  const counted = statements.filter((s) => !s.nested).reduce((sum, s) => sum + s.usPerSend, 0);
  return {
    concurrency: opts.concurrency,
    sends,
    calls: call?.calls ?? 0,
    callUsPerSend: callUs,
    statements,
    unattributedUsPerSend: callUs - counted,
    cpuUsPerSend: opts.cpuUs === null ? null : opts.cpuUs / sends,
  };
}

/** CPU µs of the postmaster and every process under it (backends, the WAL writer…), those exited included. */
function postgresCpuUs(postmaster: number): number | null {
  const processes = readProcesses();
  const ticks = processes ? treeTicks(processes, postmaster) : undefined;
  return ticks === undefined ? null : (ticks * 1e6) / clockTicksPerSecond();
}

/**
 * Where a send's PostgreSQL time goes: a durable PostgreSQL of its own with pg_stat_statements tracking the
 * statements inside functions too (track = all), `conversations` direct conversations, and the send path's own
 * code (the message service: the grouped, prepared call of tally_store_messages, with the outbox entries of earlier
 * sends completed in the next call, as the fan-out does). First `sends` sends one at a time, so every group holds one
 * send, as on a quiet host at 1000/s (docs/benchmarks.md); then as many sent `concurrency` at a time on different
 * conversations, so that groups form. pg_stat_statements times a statement's ExecutorRun and ExecutorFinish: the
 * executor's setup and teardown of each statement, and PL/pgSQL's own work, fall in no statement's time but in the
 * call's.
 */
export async function measureStatements(opts: {
  conversations: number;
  sends: number;
  concurrency: number;
  /** Then `sends` more, each `gapMs` after the one before had its answer, each timed: see LoneCommit. */
  paced?: { gapMs: number };
}): Promise<StatementsResult> {
  const services = await startThrowawayServices({
    name: "bench-statements",
    durable: true,
    migrate: true,
    settings: { shared_preload_libraries: "pg_stat_statements", "pg_stat_statements.track": "all" },
  });
  const pg = services.postgres;
  let db: Db | undefined;
  try {
    db = createDb(pg.url);
    await db.$executeRawUnsafe(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`);
    const n = opts.conversations;
    await db.$executeRawUnsafe(
      `INSERT INTO "User" ("name") SELECT 'statements_' || g FROM generate_series(1, ${2 * n}) g`,
    );
    await db.$executeRawUnsafe(
      `INSERT INTO "Conversation" ("kind", "directKey") SELECT 'direct', 'statements_' || g FROM generate_series(1, ${n}) g`,
    );
    await db.$executeRawUnsafe(
      `INSERT INTO "Membership" ("userId", "conversationId")
       SELECT u."id", c."id" FROM "Conversation" c JOIN "User" u
         ON u."name" IN ('statements_' || (2 * c."id" - 1), 'statements_' || (2 * c."id"))`,
    );
    const senders = await db.$queryRawUnsafe<{ id: number; name: string; conversationId: number }[]>(
      `SELECT u."id", u."name", m."conversationId" FROM "User" u JOIN "Membership" m ON m."userId" = u."id"
       WHERE u."name" = 'statements_' || (2 * m."conversationId" - 1) ORDER BY m."conversationId"`,
    );
    // As the fan-out does once Redis has a message's counters: its entry is deleted by the next call.
    const completed: number[] = [];
    const messages = createMessageService({
      db,
      outbox: { take: () => completed.splice(0), completeSoon: (ids) => void completed.push(...ids) },
    });
    let next = 0;
    const send = async () => {
      const s = senders[next++ % senders.length]!;
      const sent = await messages.send(
        { id: s.id, name: s.name },
        { conversationId: s.conversationId, clientMsgId: randomUUID(), content: "bench message" },
      );
      if (sent.outboxId !== null) completed.push(sent.outboxId);
    };
    const window = async (concurrency: number, sends: number): Promise<StatementProfile> => {
      await db!.$executeRawUnsafe(`SELECT pg_stat_statements_reset()`);
      const before = postgresCpuUs(pg.pid);
      for (let done = 0; done < sends; done += concurrency) {
        await Promise.all(Array.from({ length: Math.min(concurrency, sends - done) }, send));
      }
      const after = postgresCpuUs(pg.pid);
      const stats = await db!.$queryRawUnsafe<StatementStat[]>(
        `SELECT s."toplevel", s."calls"::float8 AS "calls", s."total_exec_time" AS "totalExecMs", s."query"
         FROM pg_stat_statements s WHERE s."dbid" = (SELECT "oid" FROM pg_database WHERE "datname" = current_database())`,
      );
      const cpuUs = before === null || after === null ? null : after - before;
      return profileOf(stats, { concurrency, sends, cpuUs });
    };
    // Warm: the pool's connections, their prepared statement and PL/pgSQL's cached plans.
    for (let i = 0; i < 300; i++) await send();
    const profiles = [await window(1, opts.sends)];
    if (opts.concurrency > 1) profiles.push(await window(opts.concurrency, opts.sends));
    if (!opts.paced) return { profiles };
    const { gapMs } = opts.paced;
    const ms: number[] = [];
    for (let i = 0; i < opts.sends; i++) {
      await sleep(gapMs);
      const start = process.hrtime.bigint();
      await send();
      ms.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    ms.sort((a, b) => a - b);
    return {
      profiles,
      loneCommit: { gapMs, sends: ms.length, p50Ms: percentile(ms, 50), p99Ms: percentile(ms, 99) },
    };
  } finally {
    await db?.$disconnect();
    await services.stop();
  }
}

/**
 * The profiles side by side, one column per way of sending: each statement inside the call, what the call spent
 * outside them, the whole call, and every PostgreSQL process' CPU, all per send.
 */
export function statementsTable(result: StatementsResult): { headers: string[]; rows: (string | number)[][] } {
  const { profiles } = result;
  const us = (v: number | null | undefined) => (v === null || v === undefined ? "n/a" : Math.round(v));
  const labels = [...new Set(profiles.flatMap((p) => p.statements.map((s) => s.label)))];
  const runs = (label: string) =>
    profiles
      .map((p) => p.statements.find((s) => s.label === label)?.perSend)
      .map((v) => (v === undefined ? "—" : Number(v.toPrecision(3))))
      .join(" / ");
  return {
    headers: [
      "where (per send)",
      "runs per send",
      ...profiles.map((p) =>
        p.concurrency === 1
          ? "µs, one at a time"
          : `µs, ${p.concurrency} at once (${Number((p.sends / p.calls).toPrecision(3))} a call)`,
      ),
    ],
    rows: [
      ...labels.map((label) => [
        label,
        runs(label),
        ...profiles.map((p) => us(p.statements.find((s) => s.label === label)?.usPerSend)),
      ]),
      [
        "in no statement: PL/pgSQL, and each statement's executor setup and teardown",
        "",
        ...profiles.map((p) => us(p.unattributedUsPerSend)),
      ],
      ["the call's execution, all of the above", "", ...profiles.map((p) => us(p.callUsPerSend))],
      ["PostgreSQL CPU, every process (/proc)", "", ...profiles.map((p) => us(p.cpuUsPerSend))],
    ],
  };
}
