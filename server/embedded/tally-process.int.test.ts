import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { Redis } from "ioredis";
import { createTestDatabase, type TestDatabase } from "../testing/db.ts";
import { connectSocket, nextEvent, type ClientSocket } from "../testing/harness.ts";
import { freePort } from "./ports.ts";
import { startRedisServer } from "./redis.ts";
import { startRedisCluster } from "./redis-cluster.ts";
import { TallyProcess } from "./tally-process.ts";

const run = promisify(execFile);

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

it("answers alive but not healthy while its Redis is away, and stops on SIGTERM (QUIT would wait for a reconnection for good)", async () => {
  const redis = await startRedisServer({ dir: dataRoot });
  const instance = await TallyProcess.start({ ...(await options("redis-away")), redis: redis.url });
  try {
    await redis.stop();
    await expect.poll(async () => (await fetch(`${instance.url}/api/health`)).status).toBe(503);
    // Not ready, but alive: a liveness probe leaves it running.
    const live = await fetch(`${instance.url}/api/live`);
    expect({ status: live.status, body: await live.json() }).toEqual({ status: 200, body: { ok: true } });
    // Resolves once the process has exited; before the shutdown's steps had deadlines it never did.
    await instance.kill("SIGTERM");
    expect(instance.alive).toBe(false);
  } finally {
    await instance.stop();
    await redis.stop();
  }
}, 60_000);

it("takes a signal heard twice at once for one request and stops gracefully, and the same one later for 'now'", async () => {
  const redis = await startRedisServer({ dir: dataRoot });
  const echoed = await TallyProcess.start({ ...(await options("signal-echo")), redis: redis.url });
  const impatient = await TallyProcess.start({ ...(await options("signal-again")), redis: redis.url });
  // A shutdown that takes a while: with its Redis paused, closing the connections waits up to 10 s.
  redis.kill("SIGSTOP");
  try {
    // As npm (and tsx, before) passes on a SIGTERM the whole process group got: the server hears it again once it is
    // stopping (33 ms later under tsx; two sent before it handles the first are one signal).
    const echoedExit = echoed.exited();
    process.kill(echoed.pid!, "SIGTERM");
    await expect.poll(() => echoed.log, { interval: 5 }).toMatch(/"msg":"shutting down"/);
    process.kill(echoed.pid!, "SIGTERM");
    await echoedExit;
    // Before: "stopping now, without waiting for the rest", nothing drained.
    expect(echoed.log).not.toMatch(/stopping now/);
    expect(echoed.log).toMatch(/"msg":"stopped"/);

    // A person who asks again after a moment.
    const impatientExit = impatient.exited();
    process.kill(impatient.pid!, "SIGTERM");
    await expect.poll(() => impatient.log).toMatch(/"msg":"shutting down"/);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    process.kill(impatient.pid!, "SIGTERM");
    await impatientExit;
    expect(impatient.log).toMatch(/stopping now, without waiting for the rest/);
  } finally {
    redis.kill("SIGCONT");
    await echoed.stop();
    await impatient.stop();
    await redis.stop();
  }
}, 90_000);

it("answers while its Redis is paused (connections open, nothing answered), and serves again once it answers", async () => {
  const redis = await startRedisServer({ dir: dataRoot });
  const instance = await TallyProcess.start({ ...(await options("redis-paused")), redis: redis.url });
  const sockets: { disconnect(): void }[] = [];
  const signIn = () =>
    fetch(`${instance.url}/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "paused_alice", password: "a good password" }),
      signal: AbortSignal.timeout(30_000),
    }).then(async (res) => ({ status: res.status, body: await res.json() }));
  try {
    await expectMessageCounted(instance.url, "paused", sockets);
    redis.kill("SIGSTOP");
    // The limits' in-memory stand-ins and the database answer it. Before, it waited for Redis for good (aborted
    // here after 30 s): the connection stayed open and ioredis has no timeout of its own.
    const paused = await signIn();
    expect(paused).toMatchObject({ status: 200, body: { ok: true, user: { name: "paused_alice" } } });
    expect((await fetch(`${instance.url}/api/health`)).status).toBe(503);
    redis.kill("SIGCONT");
    await expect.poll(async () => (await fetch(`${instance.url}/api/health`)).status, { timeout: 10_000 }).toBe(200);
    // Counted and pushed again, on the reconnected connections.
    await expectMessageCounted(instance.url, "resumed", sockets);
  } finally {
    redis.kill("SIGCONT");
    for (const s of sockets) s.disconnect();
    await instance.stop();
    await redis.stop();
  }
}, 90_000);

it("runs on a Redis Cluster that asks for a password (REDIS_CLUSTER_PASSWORD), and cannot become healthy without it", async () => {
  const cluster = await startRedisCluster({
    dir: path.join(dataRoot, "auth-cluster"),
    masters: 3,
    replicasPerMaster: 0,
  });
  const password = "a cluster's secret";
  const sockets: { disconnect(): void }[] = [];
  try {
    for (const port of cluster.ports) {
      const node = new Redis({ port, host: "127.0.0.1" });
      await node.config("SET", "requirepass", password);
      node.disconnect();
    }
    const target = { clusterNodes: cluster.nodes, auth: { password } };
    const instance = await TallyProcess.start({ ...(await options("cluster-auth")), redis: target });
    try {
      expect((await fetch(`${instance.url}/api/health`)).status).toBe(200);
      // A message goes through the counters and the adapter's sharded pub/sub, both on the cluster.
      await expectMessageCounted(instance.url, "auth", sockets);
    } finally {
      for (const s of sockets) s.disconnect();
      await instance.stop();
    }
    // Without the password every node answers NOAUTH: the instance never reports healthy.
    const error: unknown = await TallyProcess.start({
      ...(await options("cluster-noauth")),
      redis: { clusterNodes: cluster.nodes },
      readyTimeoutMs: 5_000,
    }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(Error);
  } finally {
    await cluster.stop();
  }
}, 120_000);

/**
 * Through the instance at `url`: `<prefix>_alice` writes to `<prefix>_bob` (both signed up here), and bob's socket
 * hears the message counted (so the counters and the pushes both work on the instance's Redis).
 */
async function expectMessageCounted(url: string, prefix: string, sockets: { disconnect(): void }[]) {
  const signUp = async (name: string) => {
    const res = await fetch(`${url}/api/users`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name, password: "a good password" }),
    });
    return (await res.json()) as { token: string };
  };
  const alice = await signUp(`${prefix}_alice`);
  const bob = await signUp(`${prefix}_bob`);
  const created = await fetch(`${url}/api/conversations`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${alice.token}` },
    body: JSON.stringify({ memberNames: [`${prefix}_bob`] }),
  });
  const { conversation } = (await created.json()) as { conversation: { id: number } };
  const bobSocket = await connectSocket<ClientSocket>(url, bob.token, sockets);
  const aliceSocket = await connectSocket<ClientSocket>(url, alice.token, sockets);
  const changed = nextEvent(bobSocket, "unread:changed");
  const sent = await aliceSocket.emitWithAck("message:send", {
    conversationId: conversation.id,
    clientMsgId: `${prefix}-1`,
    content: `over a cluster (${prefix})`,
  });
  expect(sent).toMatchObject({ ok: true });
  expect(await changed).toMatchObject({ conversationId: conversation.id, unreadCount: 1, totalUnread: 1 });
}

/** A CA and a certificate it signed for 127.0.0.1 (an IP SAN, server and client use), as PEM files in `dir`. */
async function testCertificates(dir: string) {
  await mkdir(dir, { recursive: true });
  const file = (name: string) => path.join(dir, name);
  const openssl = (args: string[]) => run("openssl", args, { cwd: dir });
  await openssl(
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Tally test CA"].concat([
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
    ]),
  );
  await openssl([
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=127.0.0.1",
    "-keyout",
    "node.key",
    "-out",
    "node.csr",
  ]);
  await writeFile(file("ext.cnf"), "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n");
  await openssl([
    "x509",
    "-req",
    "-in",
    "node.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    "ext.cnf",
    "-out",
    "node.crt",
  ]);
  return { caFile: file("ca.crt"), certFile: file("node.crt"), keyFile: file("node.key") };
}

it("runs on a Redis Cluster over TLS (REDIS_CLUSTER_TLS, REDIS_CLUSTER_TLS_CA), and cannot become healthy in plain TCP or without the CA", async () => {
  const tls = await testCertificates(path.join(dataRoot, "tls"));
  const cluster = await startRedisCluster({
    dir: path.join(dataRoot, "tls-cluster"),
    masters: 3,
    replicasPerMaster: 0,
    tls,
  });
  const sockets: { disconnect(): void }[] = [];
  try {
    const instance = await TallyProcess.start({
      ...(await options("cluster-tls")),
      redis: { clusterNodes: cluster.tlsNodes, tls: { caFile: tls.caFile } },
    });
    try {
      expect((await fetch(`${instance.url}/api/health`)).status).toBe(200);
      // A message goes through the counters and the adapter's sharded pub/sub, both over TLS.
      await expectMessageCounted(instance.url, "tls", sockets);
    } finally {
      for (const s of sockets) s.disconnect();
      await instance.stop();
    }
    // Plain TCP to the TLS ports, and TLS that does not trust the cluster's CA: never healthy.
    for (const [name, redis] of [
      ["cluster-plain", { clusterNodes: cluster.tlsNodes }],
      ["cluster-untrusted", { clusterNodes: cluster.tlsNodes, tls: {} }],
    ] as const) {
      const error: unknown = await TallyProcess.start({ ...(await options(name)), redis, readyTimeoutMs: 5_000 }).catch(
        (err: unknown) => err,
      );
      expect(error, name).toBeInstanceOf(Error);
    }
  } finally {
    await cluster.stop();
  }
}, 120_000);
