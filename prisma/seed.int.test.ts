import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDb, type Db } from "../server/db/prisma.ts";
import { createTestDatabase, type TestDatabase } from "../server/testing/db.ts";
import { demoUsers } from "./seed-data.ts";
import { seedDemo } from "./seed.ts";

let database: TestDatabase;
let db: Db;
beforeAll(async () => {
  database = await createTestDatabase(inject("pgAdminUrl"));
  db = createDb(database.url);
});
afterAll(async () => {
  await db.$disconnect();
  await database.drop();
});

describe("seedDemo", () => {
  it("seeds once when two instances start at once on an empty database: one seeds, the other finds it done", async () => {
    const other = createDb(database.url); // another instance's client
    const results = await Promise.all([seedDemo(db), seedDemo(other)]).finally(() => other.$disconnect());
    expect([...results].sort()).toEqual([false, true]);
    expect(await db.user.count({ where: { name: { in: demoUsers } } })).toBe(demoUsers.length);
    expect(await seedDemo(db)).toBe(false);
  });
});
