import { createHash } from "node:crypto";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../testing/db.ts";
import { defaultMigrationsDir, migrate, MigrateError, PRISMA_ADVISORY_LOCK_KEY } from "./migrate.ts";

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

let database: TestDatabase;
let workDir: string;
const clients: pg.Client[] = [];

beforeEach(async () => {
  database = await createTestDatabase(inject("pgAdminUrl"), { migrate: false });
  workDir = await mkdtemp(path.join(os.tmpdir(), "tally-migrations-"));
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.end()));
  await database.drop();
  await rm(workDir, { recursive: true, force: true });
});

async function query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  clients.push(client);
  return (await client.query<R>(sql, params)).rows;
}

async function writeMigration(name: string, sql: string): Promise<string> {
  await mkdir(path.join(workDir, name), { recursive: true });
  const file = path.join(workDir, name, "migration.sql");
  await writeFile(file, sql);
  return file;
}

interface Row {
  id: string;
  checksum: string;
  migration_name: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  logs: string | null;
  applied_steps_count: number;
}

const records = (): Promise<Row[]> => query<Row>(`SELECT * FROM "_prisma_migrations" ORDER BY migration_name`);

describe("migrate", () => {
  it("applies the repository's migrations to a fresh database and records them as Prisma does", async () => {
    const names = (await readdir(defaultMigrationsDir, { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
    expect(names.length).toBeGreaterThan(0);

    expect(await migrate(database.url)).toEqual({ applied: names });

    const tables = await query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`,
    );
    expect(tables.map((t) => t.table_name)).toEqual(
      expect.arrayContaining(["_prisma_migrations", "User", "Conversation", "Membership", "Message"]),
    );

    const rows = await records();
    expect(rows.map((row) => row.migration_name)).toEqual(names);
    for (const row of rows) {
      const script = await readFile(path.join(defaultMigrationsDir, row.migration_name, "migration.sql"), "utf8");
      expect(row.checksum).toBe(sha256(script));
      expect(row.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(row.rolled_back_at).toBeNull();
      expect(row.logs).toBeNull();
      expect(row.applied_steps_count).toBe(1);
    }

    expect(await migrate(database.url)).toEqual({ applied: [] });
    expect(await records()).toHaveLength(names.length);
  });

  it("creates _prisma_migrations with Prisma's exact column definitions", async () => {
    await migrate(database.url, { migrationsDir: workDir });
    const columns = await query(
      `SELECT column_name, data_type, character_maximum_length AS len, is_nullable, column_default
         FROM information_schema.columns WHERE table_name = '_prisma_migrations' ORDER BY ordinal_position`,
    );
    expect(columns).toEqual([
      { column_name: "id", data_type: "character varying", len: 36, is_nullable: "NO", column_default: null },
      { column_name: "checksum", data_type: "character varying", len: 64, is_nullable: "NO", column_default: null },
      {
        column_name: "finished_at",
        data_type: "timestamp with time zone",
        len: null,
        is_nullable: "YES",
        column_default: null,
      },
      {
        column_name: "migration_name",
        data_type: "character varying",
        len: 255,
        is_nullable: "NO",
        column_default: null,
      },
      { column_name: "logs", data_type: "text", len: null, is_nullable: "YES", column_default: null },
      {
        column_name: "rolled_back_at",
        data_type: "timestamp with time zone",
        len: null,
        is_nullable: "YES",
        column_default: null,
      },
      {
        column_name: "started_at",
        data_type: "timestamp with time zone",
        len: null,
        is_nullable: "NO",
        column_default: "now()",
      },
      { column_name: "applied_steps_count", data_type: "integer", len: null, is_nullable: "NO", column_default: "0" },
    ]);
    const [pk] = await query<{ conname: string; def: string }>(
      `SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
        WHERE conrelid = '"_prisma_migrations"'::regclass AND contype = 'p'`,
    );
    expect(pk).toEqual({ conname: "_prisma_migrations_pkey", def: "PRIMARY KEY (id)" });
  });

  it("applies only new migrations, in name order", async () => {
    await writeMigration("20260101000000_b", `CREATE TABLE b (id int);`);
    await writeMigration("20250101000000_a", `CREATE TABLE a (id int);`);
    expect(await migrate(database.url, { migrationsDir: workDir })).toEqual({
      applied: ["20250101000000_a", "20260101000000_b"],
    });
    await writeMigration("20270101000000_c", `ALTER TABLE a ADD COLUMN note text; CREATE TABLE c (id int);`);
    expect(await migrate(database.url, { migrationsDir: workDir })).toEqual({ applied: ["20270101000000_c"] });
    expect((await records()).map((row) => row.migration_name)).toEqual([
      "20250101000000_a",
      "20260101000000_b",
      "20270101000000_c",
    ]);
  });

  it("refuses when an applied migration's file changed, and applies nothing else", async () => {
    await cp(defaultMigrationsDir, workDir, { recursive: true });
    await migrate(database.url, { migrationsDir: workDir });
    const [first] = (await readdir(workDir, { withFileTypes: true })).filter((e) => e.isDirectory());
    const file = path.join(workDir, first!.name, "migration.sql");
    await writeFile(file, `${await readFile(file, "utf8")}\n-- edited after it was applied\n`);
    await writeMigration("29990101000000_later", `CREATE TABLE later (id int);`);

    const error = await migrate(database.url, { migrationsDir: workDir }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(MigrateError);
    expect(error).toMatchObject({ code: "checksum_mismatch" });
    expect((error as Error).message).toContain(first!.name);
    expect(await query(`SELECT to_regclass('later') AS t`)).toEqual([{ t: null }]);
  });

  it("accepts a checksum recorded before git changed the line endings", async () => {
    const file = await writeMigration("20250101000000_a", "CREATE TABLE a (id int);\nCREATE TABLE b (id int);\n");
    await migrate(database.url, { migrationsDir: workDir });
    await writeFile(file, "CREATE TABLE a (id int);\r\nCREATE TABLE b (id int);\r\n");
    expect(await migrate(database.url, { migrationsDir: workDir })).toEqual({ applied: [] });
  });

  it("rolls back a failing migration, records it as failed, and refuses until it is resolved", async () => {
    await writeMigration("20250101000000_ok", `CREATE TABLE ok (id int);`);
    const broken = await writeMigration(
      "20250102000000_broken",
      `CREATE TABLE half (id int);\nSELECT nope FROM nowhere;`,
    );

    const error = await migrate(database.url, { migrationsDir: workDir }).catch((err: unknown) => err);
    expect(error).toMatchObject({ code: "migration_failed" });
    expect(await query(`SELECT to_regclass('ok') IS NOT NULL AS ok, to_regclass('half') IS NOT NULL AS half`)).toEqual([
      { ok: true, half: false },
    ]);
    const failed = (await records()).find((row) => row.migration_name === "20250102000000_broken");
    expect(failed).toMatchObject({ finished_at: null, rolled_back_at: null, applied_steps_count: 0 });
    expect(failed?.logs).toContain("nowhere");

    await writeFile(broken, `CREATE TABLE half (id int);`);
    const refused = await migrate(database.url, { migrationsDir: workDir }).catch((err: unknown) => err);
    expect(refused).toMatchObject({ code: "failed_migration" });
    expect((refused as Error).message).toContain("20250102000000_broken");

    // What `prisma migrate resolve --rolled-back` does.
    await query(`UPDATE "_prisma_migrations" SET rolled_back_at = now() WHERE id = $1`, [failed?.id]);
    expect(await migrate(database.url, { migrationsDir: workDir })).toEqual({ applied: ["20250102000000_broken"] });
  });

  it("lets only one of two concurrent runners apply each migration", async () => {
    await writeMigration("20250101000000_a", `CREATE TABLE a (id int);`);
    await writeMigration("20250102000000_b", `CREATE TABLE b (id int);`);
    // The test holds the migration lock until both runners are seen waiting for it: they do run at once.
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    clients.push(holder);
    await holder.query("SELECT pg_advisory_lock($1)", [PRISMA_ADVISORY_LOCK_KEY]);
    const runs = Promise.all([
      migrate(database.url, { migrationsDir: workDir }),
      migrate(database.url, { migrationsDir: workDir }),
    ]);
    const waiting = async () =>
      (
        await query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
           WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database()`,
        )
      )[0]?.n;
    await expect.poll(waiting, { timeout: 30_000 }).toBe(2);
    await holder.query("SELECT pg_advisory_unlock($1)", [PRISMA_ADVISORY_LOCK_KEY]);
    const results = await runs;
    expect(results.map((r) => r.applied.length).sort()).toEqual([0, 2]);
    expect(results.flatMap((r) => r.applied).sort()).toEqual(["20250101000000_a", "20250102000000_b"]);
    expect(await records()).toHaveLength(2);
  });

  it("refuses a migrations folder without migration.sql", async () => {
    await mkdir(path.join(workDir, "20250101000000_empty"));
    await expect(migrate(database.url, { migrationsDir: workDir })).rejects.toMatchObject({ code: "missing_script" });
  });
});

describe("20261208000000_block_flag", () => {
  const FLAG = "20261208000000_block_flag";
  const copy = async (names: string[]) => {
    for (const name of names)
      await cp(path.join(defaultMigrationsDir, name), path.join(workDir, name), { recursive: true });
  };
  const flags = async () =>
    Object.fromEntries(
      (await query<{ directKey: string; blocked: boolean }>(`SELECT "directKey", "blocked" FROM "Conversation"`)).map(
        (row) => [row.directKey, row.blocked],
      ),
    );

  it("flags the blocks made before it, and those the previous release makes and undoes while it still runs", async () => {
    const all = (await readdir(defaultMigrationsDir, { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
    await copy(all.filter((name) => name < FLAG));
    await migrate(database.url, { migrationsDir: workDir });

    // Four people; a direct conversation for three pairs; ann blocks bob, and dan blocks cid (the other way round).
    const [ann, bob, cid, dan] = (
      await query<{ id: number }>(
        `INSERT INTO "User" ("name") VALUES ('bf_ann'), ('bf_bob'), ('bf_cid'), ('bf_dan') RETURNING "id"`,
      )
    ).map((row) => row.id) as [number, number, number, number];
    const key = (a: number, b: number) => `${Math.min(a, b)}:${Math.max(a, b)}`;
    await query(
      `INSERT INTO "Conversation" ("kind", "directKey") VALUES ('direct', $1), ('direct', $2), ('direct', $3)`,
      [key(ann, bob), key(cid, dan), key(ann, cid)],
    );
    await query(`INSERT INTO "Block" ("blockerId", "blockedId") VALUES ($1, $2), ($3, $4)`, [ann, bob, dan, cid]);

    await copy([FLAG]);
    expect(await migrate(database.url, { migrationsDir: workDir })).toEqual({ applied: [FLAG] });
    expect(await flags()).toEqual({ [key(ann, bob)]: true, [key(cid, dan)]: true, [key(ann, cid)]: false });

    // The previous release writes "Block" as it always did, knowing nothing of the flag.
    await query(`INSERT INTO "Block" ("blockerId", "blockedId") VALUES ($1, $2)`, [cid, ann]);
    await query(`DELETE FROM "Block" WHERE "blockerId" = $1 AND "blockedId" = $2`, [ann, bob]);
    expect(await flags()).toEqual({ [key(ann, bob)]: false, [key(cid, dan)]: true, [key(ann, cid)]: true });
    // Both ways blocked, one unblock leaves the other's block standing.
    await query(`INSERT INTO "Block" ("blockerId", "blockedId") VALUES ($1, $2)`, [ann, cid]);
    await query(`DELETE FROM "Block" WHERE "blockerId" = $1 AND "blockedId" = $2`, [cid, ann]);
    expect((await flags())[key(ann, cid)]).toBe(true);
    await query(`DELETE FROM "Block" WHERE "blockerId" = $1 AND "blockedId" = $2`, [ann, cid]);
    expect((await flags())[key(ann, cid)]).toBe(false);
  });
});
