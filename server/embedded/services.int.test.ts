import { existsSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { logger } from "../log.ts";
import { createTestDatabase, type TestDatabase } from "../testing/db.ts";
import { servicesFile, startServices } from "./services.ts";

let database: TestDatabase;
let dataDir: string;
beforeAll(async () => {
  database = await createTestDatabase(inject("pgAdminUrl"));
  dataDir = await mkdtemp(path.join(os.tmpdir(), "tally-services-"));
});
afterAll(async () => {
  await database.drop();
  await rm(dataDir, { recursive: true, force: true });
});

it("removes DATA_DIR/services.json as it stops the embedded services the file names, and keeps it for given ones", async () => {
  const env = { DATA_DIR: dataDir, DATABASE_URL: database.url, EMBEDDED_PG_GRANT_ACCESS: "0" as const };
  // Redis embedded (no REDIS_URL), as `npm start` with only DATABASE_URL set runs it; the instance records both.
  const embedded = await startServices(env, { root: dataDir, log: logger });
  writeFileSync(servicesFile(embedded.dataDir), JSON.stringify({ databaseUrl: embedded.databaseUrl }));
  await embedded.stop();
  // Before: left behind, `npm run reconcile` tried the stopped redis-server and failed on a refused connection.
  expect(existsSync(servicesFile(dataDir))).toBe(false);

  // Both given by URL: they outlive this process, and the file still names them.
  const given = await startServices({ ...env, REDIS_URL: inject("redisUrl") }, { root: dataDir, log: logger });
  writeFileSync(servicesFile(given.dataDir), JSON.stringify({ databaseUrl: given.databaseUrl }));
  await given.stop();
  expect(existsSync(servicesFile(dataDir))).toBe(true);
}, 60_000);
