import { describe, expect, it } from "vitest";
import { profileOf, statementsTable, type StatementStat } from "./statements.ts";

/** pg_stat_statements' texts as PostgreSQL 17 normalises them (constants as $n, the function's own line breaks). */
const CALL = `SELECT r_status AS "status" FROM tally_store_messages($1::int[], $2::int[], $3::text[], $4::text[], $5::int[])
    ORDER BY r_idx`;
const INSERT_MESSAGE = `INSERT INTO "Message" ("conversationId", "seq", "senderId", "clientMsgId", "content")
        VALUES (p_conversation[i], r_seq, p_sender[i], p_client_msg_id[i], p_content[i])
        RETURNING "id", "createdAt"`;
const FK_USER = `SELECT $2 FROM ONLY "public"."User" x WHERE "id" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x`;
const DELETE_OUTBOX = `DELETE FROM "OutboxEvent" WHERE "id" = ANY(p_completed)`;
const DUPLICATE = `EXISTS (SELECT $18 FROM "Message" m WHERE m."senderId" = p_sender[i] AND m."clientMsgId" = p_client_msg_id[i])`;

function stats(): StatementStat[] {
  return [
    { toplevel: true, calls: 5, totalExecMs: 4, query: CALL },
    { toplevel: false, calls: 10, totalExecMs: 1, query: INSERT_MESSAGE },
    { toplevel: false, calls: 10, totalExecMs: 0.2, query: FK_USER },
    { toplevel: false, calls: 5, totalExecMs: 0.3, query: DELETE_OUTBOX },
    { toplevel: false, calls: 10, totalExecMs: 0.5, query: DUPLICATE },
    { toplevel: false, calls: 0, totalExecMs: 0, query: `UPDATE "Membership" mb SET "lastReadSeq" = r_seq` },
    { toplevel: true, calls: 1, totalExecMs: 9, query: "SELECT pg_stat_statements_reset()" },
  ];
}

describe("profileOf", () => {
  it("puts each statement of the call per send, the costliest first, and what no statement counts", () => {
    const p = profileOf(stats(), { concurrency: 2, sends: 10, cpuUs: 7000 });
    expect(p.calls).toBe(5);
    expect(p.callUsPerSend).toBeCloseTo(400);
    expect(p.statements.map((s) => [s.label, s.perSend, Math.round(s.usPerSend), s.nested])).toEqual([
      ["the message (its foreign key checks included)", 1, 100, false],
      ["duplicate check (sender, clientMsgId)", 1, 50, false],
      ["outbox entries completed since the last call, deleted (once a call)", 0.5, 30, false],
      ['foreign key check: "User" (inside the message\'s)', 1, 20, true],
    ]);
    // The foreign key check is inside the insert's time: not subtracted twice.
    expect(p.unattributedUsPerSend).toBeCloseTo(400 - 100 - 50 - 30);
    expect(p.cpuUsPerSend).toBe(700);
  });

  it("names a statement it does not know by its text, and has no CPU without /proc", () => {
    const long = `SELECT ${"x, ".repeat(40)}y FROM "Somewhere"`;
    const p = profileOf([{ toplevel: false, calls: 2, totalExecMs: 1, query: long }], {
      concurrency: 1,
      sends: 2,
      cpuUs: null,
    });
    expect(p.statements[0]!.label).toBe(`${long.slice(0, 69)}…`);
    expect(p.callUsPerSend).toBe(0);
    expect(p.cpuUsPerSend).toBeNull();
  });
});

describe("statementsTable", () => {
  it("sets the ways of sending side by side, with a dash where a statement did not run", () => {
    const one = profileOf(stats(), { concurrency: 1, sends: 10, cpuUs: 5000 });
    const grouped = profileOf(
      stats().filter((s) => s.query !== DELETE_OUTBOX),
      { concurrency: 8, sends: 10, cpuUs: null },
    );
    const { headers, rows } = statementsTable({ profiles: [one, grouped] });
    expect(headers).toEqual(["where (per send)", "runs per send", "µs, one at a time", "µs, 8 at once (2 a call)"]);
    expect(rows.find((r) => String(r[0]).startsWith("outbox entries"))?.slice(1)).toEqual(["0.5 / —", 30, "n/a"]);
    expect(rows.slice(-3)).toEqual([
      ["in no statement: PL/pgSQL, and each statement's executor setup and teardown", "", 220, 250],
      ["the call's execution, all of the above", "", 400, 400],
      ["PostgreSQL CPU, every process (/proc)", "", 500, "n/a"],
    ]);
  });
});
