import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { logger } from "../log.ts";
import { PrismaClient } from "./generated/client.ts";

export type Db = PrismaClient;

const pools = new WeakMap<Db, pg.Pool>();

/**
 * The one way Tally opens its database: Prisma 7 over the node-postgres driver adapter, on a pool Tally makes
 * itself so that the send path's hot statement and the sync's conversation list can use it directly (`poolOf`).
 * Prisma ends the pool with the client.
 */
export function createDb(databaseUrl: string, options: { max?: number } = {}): Db {
  // Sessions in UTC: the columns are timestamp without time zone, which Prisma reads as UTC, and the send path's
  // timestamptz answers go through both Prisma (sends with mentions) and pg; a server in another zone would
  // otherwise store defaults and convert answers in its own. And in ISO DateStyle: Prisma, pg and the sync's
  // list (isoOfTimestamp) read timestamps' text in that style, which a server or database may set otherwise.
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    options: "-c TimeZone=UTC -c DateStyle=ISO,MDY",
    // A query waits at most 10 s for a connection: for a free one while all are busy, or for a new one from a
    // server that does not answer (a host gone from the network: the OS would wait minutes). It then fails, and the
    // caller answers `unavailable`. TCP keepalive probes a connection idle for 30 s, so one whose server vanished
    // is found and dropped instead of being handed to the next query.
    connectionTimeoutMillis: 10_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: 30_000,
  });
  // A client that dies while idle (the server restarted) leaves the pool by itself and the next query connects
  // anew. Prisma listens for this once it connects; until then an 'error' without a listener would end the process.
  pool.on("error", (err) => logger.warn({ err }, "an idle PostgreSQL connection failed; the next query reconnects"));
  const db = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  pools.set(db, pool);
  return db;
}

/**
 * The node-postgres pool under `db`, for what Prisma's query layer cannot do or does at a cost: the send path's
 * statement (a named prepared statement: docs/benchmarks.md, "Where the time went") and the sync's conversation
 * list (several statements in one round trip, its own type parsers: "A tenth look", "An eleventh look").
 */
export function poolOf(db: Db): pg.Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error("poolOf: this client was not made by createDb");
  return pool;
}
