import { createHash, randomUUID } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

// The runner mirrors `prisma migrate deploy` (same lock, same bookkeeping table, same row life cycle) so the
// Prisma CLI can take over wherever its schema engine is available.
export const PRISMA_ADVISORY_LOCK_KEY = 72707369;
const DEFAULT_LOCK_TIMEOUT_MS = 60_000;

export const defaultMigrationsDir = fileURLToPath(new URL("../../prisma/migrations", import.meta.url));

const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                  VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"            VARCHAR(64) NOT NULL,
    "finished_at"         TIMESTAMPTZ,
    "migration_name"      VARCHAR(255) NOT NULL,
    "logs"                TEXT,
    "rolled_back_at"      TIMESTAMPTZ,
    "started_at"          TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

export type MigrateErrorCode =
  | "missing_script"
  | "provider_mismatch"
  | "failed_migration"
  | "checksum_mismatch"
  | "lock_timeout"
  | "migration_failed";

/** Every refusal of the runner; `code` lets callers and tests tell them apart without parsing messages. */
export class MigrateError extends Error {
  readonly code: MigrateErrorCode;

  constructor(code: MigrateErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "MigrateError";
    this.code = code;
  }
}

export interface MigrateOptions {
  /** Defaults to prisma/migrations of this repository. */
  migrationsDir?: string;
  /** How long to wait for another migrator (a second server, the Prisma CLI) to finish. */
  lockTimeoutMs?: number;
}

interface MigrationScript {
  name: string;
  script: string;
  checksum: string;
}

interface MigrationRow {
  id: string;
  checksum: string;
  migration_name: string;
  started_at: Date;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  logs: string | null;
}

/**
 * Applies every migration of `migrationsDir` that the database has not recorded yet, in name order, each in
 * its own transaction. Refuses to run when the history cannot be trusted: a recorded migration that failed,
 * or an applied migration whose file has changed since.
 */
export async function migrate(databaseUrl: string, opts: MigrateOptions = {}): Promise<{ applied: string[] }> {
  const migrationsDir = opts.migrationsDir ?? defaultMigrationsDir;
  const migrations = await readMigrations(migrationsDir);

  const client = new pg.Client({ connectionString: databaseUrl });
  // A dropped connection also rejects the query in flight; without a listener it would crash the process.
  client.on("error", () => undefined);
  await client.connect();
  try {
    await acquireLock(client, opts.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS);
    try {
      await client.query(CREATE_MIGRATIONS_TABLE);
      const { rows } = await client.query<MigrationRow>(
        `SELECT id, checksum, migration_name, started_at, finished_at, rolled_back_at, logs
           FROM "_prisma_migrations" ORDER BY started_at`,
      );
      // Rows marked rolled back (`prisma migrate resolve --rolled-back`) no longer count as applied.
      const live = rows.filter((row) => row.rolled_back_at === null);
      refuseFailed(live);
      const recorded = new Map(live.map((row) => [row.migration_name, row]));
      refuseChanged(migrations, recorded, migrationsDir);

      const applied: string[] = [];
      for (const migration of migrations) {
        if (recorded.has(migration.name)) continue;
        await applyOne(client, migration);
        applied.push(migration.name);
      }
      return { applied };
    } finally {
      // Ending the session releases the lock too; this only matters when the connection is still healthy.
      await client.query("SELECT pg_advisory_unlock($1)", [PRISMA_ADVISORY_LOCK_KEY]).catch(() => undefined);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** sha256 of the script as Prisma computes it (lower-case hex). */
export function migrationChecksum(script: string): string {
  return createHash("sha256").update(script, "utf8").digest("hex");
}

// Prisma accepts a checksum taken before git rewrote line endings; so must we, or a Windows checkout of the same
// commit would be refused.
function matchesChecksum(script: string, checksum: string): boolean {
  const variants = [script, script.replaceAll("\r\n", "\n"), script.replaceAll("\r\n", "\n").replaceAll("\n", "\r\n")];
  return variants.some((variant) => migrationChecksum(variant) === checksum);
}

async function readMigrations(migrationsDir: string): Promise<MigrationScript[]> {
  const entries = await readdir(migrationsDir, { withFileTypes: true });
  await checkProvider(migrationsDir);
  const names = entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const file = path.join(migrationsDir, name, "migration.sql");
      let script: string;
      try {
        script = await readFile(file, "utf8");
      } catch (err) {
        throw new MigrateError(
          "missing_script",
          `Migration directory ${path.join(migrationsDir, name)} has no readable migration.sql. ` +
            `Every folder in ${migrationsDir} must be a migration; remove stray folders.`,
          { cause: err },
        );
      }
      return { name, script, checksum: migrationChecksum(script) };
    }),
  );
}

async function checkProvider(migrationsDir: string): Promise<void> {
  let lock: string;
  try {
    lock = await readFile(path.join(migrationsDir, "migration_lock.toml"), "utf8");
  } catch {
    return;
  }
  const provider = /^\s*provider\s*=\s*"([^"]*)"/m.exec(lock)?.[1];
  if (provider !== undefined && provider !== "postgresql") {
    throw new MigrateError(
      "provider_mismatch",
      `${path.join(migrationsDir, "migration_lock.toml")} says these migrations are for "${provider}", ` +
        `but this runner only applies PostgreSQL migrations.`,
    );
  }
}

async function acquireLock(client: pg.Client, timeoutMs: number): Promise<void> {
  await client.query(`SET lock_timeout = ${Math.max(1, Math.round(timeoutMs))}`);
  try {
    await client.query("SELECT pg_advisory_lock($1)", [PRISMA_ADVISORY_LOCK_KEY]);
  } catch (err) {
    if (isPgError(err) && err.code === "55P03") {
      throw new MigrateError(
        "lock_timeout",
        `Timed out after ${timeoutMs} ms waiting for the migration lock pg_advisory_lock(${PRISMA_ADVISORY_LOCK_KEY}). ` +
          `Another server or the Prisma CLI is migrating this database; retry when it has finished.`,
        { cause: err },
      );
    }
    throw err;
  }
  // The timeout was for the lock only; migrations themselves may legitimately wait on table locks.
  await client.query("RESET lock_timeout");
}

function refuseFailed(rows: MigrationRow[]): void {
  const failed = rows.filter((row) => row.finished_at === null);
  if (failed.length === 0) return;
  const details = failed
    .map(
      (row) =>
        `  ${row.migration_name} (started ${row.started_at.toISOString()}, id ${row.id})` +
        (row.logs ? `\n    ${row.logs.trim().replaceAll("\n", "\n    ")}` : ""),
    )
    .join("\n");
  throw new MigrateError(
    "failed_migration",
    `Refusing to migrate: _prisma_migrations records ${failed.length} failed migration(s):\n${details}\n` +
      `Repair the database by hand, then mark each one resolved, either with ` +
      `\`npx prisma migrate resolve --rolled-back <name>\` (or --applied <name> if you completed it by hand), or with ` +
      `UPDATE "_prisma_migrations" SET rolled_back_at = now() WHERE id = '<id>';`,
  );
}

function refuseChanged(
  migrations: MigrationScript[],
  recorded: Map<string, MigrationRow>,
  migrationsDir: string,
): void {
  const changed = migrations.filter((migration) => {
    const row = recorded.get(migration.name);
    return row !== undefined && !matchesChecksum(migration.script, row.checksum);
  });
  if (changed.length === 0) return;
  const details = changed
    .map(
      (migration) =>
        `  ${path.join(migrationsDir, migration.name, "migration.sql")}: file ${migration.checksum}, ` +
        `database ${recorded.get(migration.name)?.checksum ?? "?"}`,
    )
    .join("\n");
  throw new MigrateError(
    "checksum_mismatch",
    `Refusing to migrate: ${changed.length} applied migration(s) changed after they were applied:\n${details}\n` +
      `Restore the original file(s) (git checkout) and put the change in a new migration folder instead.`,
  );
}

async function applyOne(client: pg.Client, migration: MigrationScript): Promise<void> {
  const id = randomUUID();
  // Recorded before the script runs and committed on its own, as Prisma does: if the process dies mid-way the
  // unfinished row makes every later run stop and ask for a human.
  await client.query(
    `INSERT INTO "_prisma_migrations" (id, checksum, started_at, migration_name) VALUES ($1, $2, now(), $3)`,
    [id, migration.checksum, migration.name],
  );
  try {
    await client.query("BEGIN");
    await client.query(migration.script);
    // clock_timestamp(): now() would be the transaction's start time.
    await client.query(
      `UPDATE "_prisma_migrations"
          SET finished_at = clock_timestamp(), applied_steps_count = applied_steps_count + 1
        WHERE id = $1`,
      [id],
    );
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    const logs = describePgError(err);
    await client.query(`UPDATE "_prisma_migrations" SET logs = $2 WHERE id = $1`, [id, logs]).catch(() => undefined);
    throw new MigrateError(
      "migration_failed",
      `Migration ${migration.name} failed and was rolled back: ${logs}\n` +
        `It is recorded as failed in _prisma_migrations (id ${id}); fix the script, then mark that row rolled back ` +
        `(\`npx prisma migrate resolve --rolled-back ${migration.name}\` or ` +
        `UPDATE "_prisma_migrations" SET rolled_back_at = now() WHERE id = '${id}';) and migrate again.`,
      { cause: err },
    );
  }
}

function isPgError(err: unknown): err is Error & { code?: string; position?: string; detail?: string } {
  return err instanceof Error && "code" in err;
}

function describePgError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (!isPgError(err)) return err.message;
  const parts = [err.message];
  if (err.code) parts.push(`(SQLSTATE ${err.code})`);
  if (err.position) parts.push(`at character ${err.position}`);
  if (err.detail) parts.push(`detail: ${err.detail}`);
  return parts.join(" ");
}
