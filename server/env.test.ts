import { fileURLToPath } from "node:url";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { appSecurityConfig, loadEnv, readEnv as read, unreadTtlMs } from "./env.ts";
import { ConfigError } from "./errors.ts";
import { redisTargetOf } from "./redis/client.ts";
import { logger, logStartFailure, setLogFormat } from "./log.ts";

const readEnv = (vars: Record<string, string>) => read({ NODE_ENV: "test", ...vars });

describe("UNREAD_TTL_DAYS", () => {
  it("is off by default and accepts days, fractions included", () => {
    expect(unreadTtlMs(readEnv({}))).toBe(0);
    expect(unreadTtlMs(readEnv({ UNREAD_TTL_DAYS: "30" }))).toBe(30 * 86_400_000);
    expect(unreadTtlMs(readEnv({ UNREAD_TTL_DAYS: "0.5" }))).toBe(43_200_000);
  });

  it("fails fast, naming the variable, on a bad value", () => {
    expect(() => readEnv({ UNREAD_TTL_DAYS: "-1" })).toThrow(/UNREAD_TTL_DAYS/);
    expect(() => readEnv({ UNREAD_TTL_DAYS: "soon" })).toThrow(/UNREAD_TTL_DAYS/);
  });
});

describe("numbers", () => {
  it("refuses an empty or blank number, naming the variable, instead of reading it as 0", () => {
    for (const name of ["PORT", "MAX_SOCKETS_PER_USER", "OUTBOX_RELAY_MS", "RECONCILE_INTERVAL_S", "UNREAD_TTL_DAYS"]) {
      for (const value of ["", " ", "0x10", "1e3"]) {
        expect(() => readEnv({ [name]: value }), `${name}=${JSON.stringify(value)}`).toThrow(new RegExp(name));
      }
    }
    expect(readEnv({ PORT: "0" }).PORT).toBe(0);
    expect(readEnv({ PORT: "3100", RECONCILE_INTERVAL_S: "0" })).toMatchObject({ PORT: 3100, RECONCILE_INTERVAL_S: 0 });
    expect(readEnv({}).PORT).toBe(3000);
  });
});

describe("service URLs", () => {
  it("say what a URL must look like when it is not one of its kind", () => {
    expect(() => readEnv({ REDIS_URL: "localhost:6379" })).toThrow(
      "REDIS_URL: must be a Redis URL: redis://host:6379 (rediss:// for TLS)",
    );
    expect(() => readEnv({ DATABASE_URL: "mysql://u@h/db" })).toThrow(
      "DATABASE_URL: must be a PostgreSQL URL: postgresql://user:password@host:5432/database",
    );
    expect(readEnv({ DATABASE_URL: "postgres://u@h/db", REDIS_URL: "rediss://h:6380" })).toMatchObject({
      DATABASE_URL: "postgres://u@h/db",
      REDIS_URL: "rediss://h:6380",
    });
  });
});

describe("security settings", () => {
  it("reads origins, cookie flags and limit overrides", () => {
    const env = readEnv({
      ALLOWED_ORIGINS: "https://chat.example.com, http://localhost:3000/",
      SECURE_COOKIES: "1",
      RATE_LIMITS: "signUp=200/1h,send=10/2s",
    });
    expect(env.ALLOWED_ORIGINS).toEqual(["https://chat.example.com", "http://localhost:3000"]);
    expect(env.SECURE_COOKIES).toBe("1");
    expect(env.RATE_LIMITS).toEqual({ signUp: { points: 200, durationS: 3600 }, send: { points: 10, durationS: 2 } });
  });

  it("names the variable of a bad origin or an unknown limit", () => {
    expect(() => readEnv({ ALLOWED_ORIGINS: "chat.example.com" })).toThrow(/ALLOWED_ORIGINS/);
    expect(() => readEnv({ RATE_LIMITS: "sendz=1/1s" })).toThrow(/RATE_LIMITS.*unknown limit sendz/s);
    expect(() => readEnv({ RATE_LIMITS: "send=ten" })).toThrow(/RATE_LIMITS/);
  });

  it("reads TRUST_PROXY as off, any peer, or the proxies' addresses and ranges, and names it when it is neither", () => {
    expect(appSecurityConfig(readEnv({})).trustProxy).toBe(false);
    expect(appSecurityConfig(readEnv({ TRUST_PROXY: "1" })).trustProxy).toBe(true);
    expect(appSecurityConfig(readEnv({ TRUST_PROXY: "10.0.0.5, 10.1.0.0/16,fd00::/8" })).trustProxy).toEqual([
      "10.0.0.5",
      "10.1.0.0/16",
      "fd00::/8",
    ]);
    expect(() => readEnv({ TRUST_PROXY: "yes" })).toThrow(/TRUST_PROXY.*comma-separated/s);
    expect(() => readEnv({ TRUST_PROXY: "10.0.0.0/33" })).toThrow(/TRUST_PROXY/);
  });
});

describe("a Redis Cluster's AUTH", () => {
  it("goes to every node of REDIS_CLUSTER_NODES, and is refused without them or without a password", () => {
    const nodes = { REDIS_CLUSTER_NODES: "10.0.0.5:7000,10.0.0.6:7000" };
    expect(redisTargetOf(readEnv({ ...nodes, REDIS_CLUSTER_PASSWORD: "s3cret" }))).toEqual({
      clusterNodes: ["10.0.0.5:7000", "10.0.0.6:7000"],
      auth: { password: "s3cret" },
    });
    const acl = readEnv({ ...nodes, REDIS_CLUSTER_USERNAME: "tally", REDIS_CLUSTER_PASSWORD: "s3cret" });
    expect(redisTargetOf(acl)).toMatchObject({ auth: { username: "tally", password: "s3cret" } });
    expect(redisTargetOf(readEnv(nodes))).toEqual({ clusterNodes: ["10.0.0.5:7000", "10.0.0.6:7000"] });
    expect(() => readEnv({ REDIS_CLUSTER_PASSWORD: "s3cret" })).toThrow(/REDIS_CLUSTER_PASSWORD: is for/);
    expect(() => readEnv({ ...nodes, REDIS_CLUSTER_USERNAME: "tally" })).toThrow(/REDIS_CLUSTER_USERNAME: needs/);
  });
});

describe("a Redis Cluster over TLS", () => {
  it("goes to every node of REDIS_CLUSTER_NODES with the CA file given, and is refused without them", () => {
    const nodes = { REDIS_CLUSTER_NODES: "10.0.0.5:7000" };
    const ca = fileURLToPath(import.meta.url); // any file that exists
    expect(redisTargetOf(readEnv({ ...nodes, REDIS_CLUSTER_TLS: "1" }))).toEqual({
      clusterNodes: ["10.0.0.5:7000"],
      tls: {},
    });
    expect(redisTargetOf(readEnv({ ...nodes, REDIS_CLUSTER_TLS: "1", REDIS_CLUSTER_TLS_CA: ca }))).toEqual({
      clusterNodes: ["10.0.0.5:7000"],
      tls: { caFile: ca },
    });
    expect(() => readEnv({ REDIS_CLUSTER_TLS: "1" })).toThrow(/REDIS_CLUSTER_TLS: is for REDIS_CLUSTER_NODES/);
    expect(() => readEnv({ ...nodes, REDIS_CLUSTER_TLS_CA: ca })).toThrow(
      /REDIS_CLUSTER_TLS_CA: needs REDIS_CLUSTER_TLS=1/,
    );
    expect(() => readEnv({ ...nodes, REDIS_CLUSTER_TLS: "1", REDIS_CLUSTER_TLS_CA: "/no/such/ca.pem" })).toThrow(
      /REDIS_CLUSTER_TLS_CA: no such file/,
    );
    expect(() => readEnv({ ...nodes, REDIS_CLUSTER_TLS: "yes" })).toThrow(/REDIS_CLUSTER_TLS/);
  });
});

describe("loadEnv", () => {
  const saved = process.env.LOG_LEVEL;
  const before = logger.level;
  afterEach(() => {
    // process.env itself must stay (loadEnvFile writes through it); only the variable is put back.
    if (saved === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = saved;
    logger.level = before;
  });

  function withDotEnv(text: string): string {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tally-env-"));
    writeFileSync(path.join(dir, ".env"), text);
    return dir;
  }

  it("takes LOG_LEVEL from .env and sets the logger's level after validating it", () => {
    delete process.env.LOG_LEVEL;
    const dir = withDotEnv("LOG_LEVEL=debug\n");
    try {
      expect(loadEnv(dir).LOG_LEVEL).toBe("debug");
      expect(logger.level).toBe("debug");
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it("takes LOG_FORMAT from .env: pretty prints one readable line per event, json prints JSON", () => {
    const printed: string[] = [];
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      printed.push(String(chunk));
      return true;
    });
    const pretty = withDotEnv("LOG_FORMAT=pretty\n");
    const json = withDotEnv("LOG_FORMAT=json\n");
    try {
      delete process.env.LOG_FORMAT;
      loadEnv(pretty);
      logger.info({ port: 3000 }, "Tally is running");
      delete process.env.LOG_FORMAT;
      loadEnv(json);
      logger.info({ port: 3000 }, "Tally is running");
    } finally {
      spy.mockRestore();
      delete process.env.LOG_FORMAT;
      setLogFormat("auto");
      rmSync(pretty, { recursive: true });
      rmSync(json, { recursive: true });
    }
    expect(printed[0]).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: Tally is running \{"port":3000\}\n$/);
    expect(JSON.parse(printed[1]!)).toMatchObject({ level: 30, msg: "Tally is running", port: 3000 });
  });

  it("reports a bad configuration in the format asked for: readable lines with LOG_FORMAT=pretty, no stack", () => {
    const printed: string[] = [];
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      printed.push(String(chunk));
      return true;
    });
    const dir = withDotEnv("LOG_FORMAT=pretty\nPORT=abc\nRECONCILE_INTERVAL_S=\n");
    try {
      delete process.env.LOG_FORMAT;
      let failure: unknown;
      try {
        loadEnv(dir);
      } catch (err) {
        failure = err;
      }
      expect(failure).toBeInstanceOf(ConfigError);
      logStartFailure(failure, "failed to start");
    } finally {
      spy.mockRestore();
      delete process.env.LOG_FORMAT;
      delete process.env.PORT;
      delete process.env.RECONCILE_INTERVAL_S;
      setLogFormat("auto");
      rmSync(dir, { recursive: true });
    }
    expect(printed).toHaveLength(1);
    expect(printed[0]!.split("\n")).toEqual([
      expect.stringMatching(/^\[\d\d:\d\d:\d\d\] FATAL: Invalid configuration:$/),
      "  PORT: must be a number, in digits",
      "  RECONCILE_INTERVAL_S: must be a number, in digits",
      "See README.md#configuration and .env.example.",
      "",
    ]);
  });

  it("names a bad LOG_FORMAT", () => {
    delete process.env.LOG_FORMAT;
    const dir = withDotEnv("LOG_FORMAT=xml\n");
    try {
      expect(() => loadEnv(dir)).toThrow(/LOG_FORMAT/);
    } finally {
      delete process.env.LOG_FORMAT;
      rmSync(dir, { recursive: true });
    }
  });

  it("names a bad LOG_LEVEL instead of crashing the logger", () => {
    delete process.env.LOG_LEVEL;
    const dir = withDotEnv("LOG_LEVEL=loud\n");
    try {
      expect(() => loadEnv(dir)).toThrow(/LOG_LEVEL/);
      expect(logger.level).toBe(before);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
});
