import { randomBytes } from "node:crypto";
import pg from "pg";
import { migrate } from "../db/migrate.ts";

export interface TestDatabase {
  url: string;
  /** Drops the database, disconnecting whoever is still connected. */
  drop(): Promise<void>;
}

/**
 * A database of its own for one test file, in the cluster behind `adminUrl` (the one global-setup started),
 * with every migration applied unless `migrate: false`.
 */
export async function createTestDatabase(adminUrl: string, opts: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const name = `tally_t_${randomBytes(6).toString("hex")}`;
  await withAdmin(adminUrl, (client) => client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;

  let dropped: Promise<void> | undefined;
  const drop = (): Promise<void> => {
    dropped ??= withAdmin(adminUrl, async (client) => {
      await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
    });
    return dropped;
  };

  if (opts.migrate ?? true) {
    try {
      await migrate(url.toString());
    } catch (err) {
      await drop().catch(() => undefined);
      throw err;
    }
  }
  return { url: url.toString(), drop };
}

async function withAdmin<T>(adminUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on("error", () => undefined);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}
