import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../testing/db.ts";
import { freePort } from "./ports.ts";
import { startRedisServer } from "./redis.ts";
import { TallyProcess } from "./tally-process.ts";

let database: TestDatabase;
let dataRoot: string;
beforeAll(async () => {
  database = await createTestDatabase(inject("pgAdminUrl"));
  dataRoot = await mkdtemp(path.join(os.tmpdir(), "tally-process-"));
});
afterAll(async () => {
  await database.drop();
  await rm(dataRoot, { recursive: true, force: true });
});

const options = async (name: string) => ({
  name,
  port: await freePort(),
  databaseUrl: database.url,
  redis: inject("redisUrl"),
  dataDir: path.join(dataRoot, name),
  env: { SERVE_UI: "0", LAB: "0", NODE_ENV: "production" },
});

it("starts an instance, survives a crash by restarting on the same port, and stops it", async () => {
  const instance = await TallyProcess.start(await options("crashy"));
  try {
    expect((await fetch(`${instance.url}/api/health`)).status).toBe(200);
    await instance.kill("SIGKILL");
    expect(instance.alive).toBe(false);
    await expect(fetch(`${instance.url}/api/health`)).rejects.toThrow();

    await instance.restart();
    expect(instance.alive).toBe(true);
    expect((await fetch(`${instance.url}/api/health`)).status).toBe(200);
  } finally {
    await instance.stop();
  }
  expect(instance.alive).toBe(false);
  await instance.stop(); // twice is fine
});

it("fails a start that cannot become healthy, quoting what the process printed", async () => {
  const bad = { ...(await options("bad")), env: { SERVE_UI: "0", LOG_LEVEL: "loud" } };
  const error: unknown = await TallyProcess.start(bad).catch((err: unknown) => err);
  expect(error).toBeInstanceOf(Error);
  expect((error as Error).message).toMatch(/Tally bad on http:\/\/127\.0\.0\.1:\d+: exited with 1 before it was ready/);
  expect((error as Error).message).toContain("LOG_LEVEL");
});

it("stops on SIGTERM while its Redis is away (QUIT would wait for a reconnection for good)", async () => {
  const redis = await startRedisServer({ dir: dataRoot });
  const instance = await TallyProcess.start({ ...(await options("redis-away")), redis: redis.url });
  try {
    await redis.stop();
    await expect.poll(async () => (await fetch(`${instance.url}/api/health`)).status).toBe(503);
    // Resolves once the process has exited; before the shutdown's steps had deadlines it never did.
    await instance.kill("SIGTERM");
    expect(instance.alive).toBe(false);
  } finally {
    await instance.stop();
    await redis.stop();
  }
}, 60_000);
