import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "./generated/client.ts";

export type Db = PrismaClient;

const pools = new WeakMap<Db, pg.Pool>();

/**
 * The one way Tally opens its database: Prisma 7 over the node-postgres driver adapter, on a pool Tally makes
 * itself so the send path's one hot statement can use it directly (`poolOf`). Prisma ends the pool with the client.
 */
export function createDb(databaseUrl: string, options: { max?: number } = {}): Db {
  // Sessions in UTC: the columns are timestamp without time zone, which Prisma reads as UTC, and the send path's
  // timestamptz answers go through both Prisma (sends with mentions) and pg; a server in another zone would
  // otherwise store defaults and convert answers in its own.
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    options: "-c TimeZone=UTC",
    // A server that does not answer (a host gone from the network) fails a new connection in 5 s instead of the
    // OS's minutes, and TCP keepalive finds a connection whose server vanished while it was idle.
    connectionTimeoutMillis: 5_000,
    keepAlive: true,
  });
  // A client that dies while idle (the server restarted) leaves the pool by itself and the next query connects
  // anew. Prisma listens for this once it connects; until then an 'error' without a listener would end the process.
  pool.on("error", () => {});
  const db = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  pools.set(db, pool);
  return db;
}

/**
 * The node-postgres pool under `db`, for statements on the send path where Prisma's query layer costs more than
 * the statement (a named prepared statement through `pg` directly: docs/benchmarks.md, "Where the time went").
 */
export function poolOf(db: Db): pg.Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error("poolOf: this client was not made by createDb");
  return pool;
}
