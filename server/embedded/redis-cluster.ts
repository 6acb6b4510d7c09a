import { execFile } from "node:child_process";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { logger } from "../log.ts";
import { freePort } from "./ports.ts";
import { startRedisServer, type RedisServer } from "./redis.ts";

const run = promisify(execFile);

export const REDIS_CLI_MISSING =
  "redis-cli was not found on PATH; it creates and reshards the local Redis Cluster. Install it (Debian/Ubuntu: " +
  "sudo apt-get install redis-tools; macOS: brew install redis).";

const SETTLE_TIMEOUT_MS = 30_000;

/**
 * How long one redis-cli call (creating the cluster, a resharding) may take before it is killed and fails: it
 * had no bound, and a soak round once hung for over five minutes without saying where (docs/consistency.md).
 */
const CLI_TIMEOUT_MS = 120_000;

export interface RedisClusterOptions {
  /** Each node gets `<dir>/<port>` for its nodes.conf (nothing else is persisted). */
  dir: string;
  masters?: number;
  replicasPerMaster?: number;
  /**
   * cluster-node-timeout: how long a master may be unreachable before its replica is promoted. Small in tests
   * (a failover takes about twice this), Redis' default 15 s is for real networks.
   */
  nodeTimeoutMs?: number;
  /**
   * A TLS port on every node as well (its certificate and key, and the CA that signed them, as PEM files), with the
   * cluster bus and replication over TLS (`tls-cluster yes`): a client on a TLS port is told the nodes' TLS ports,
   * one on a plain port (this module's own commands, redis-cli) their plain ones. Clients need no certificate.
   */
  tls?: { certFile: string; keyFile: string; caFile: string };
  /**
   * How long killMaster waits for Redis to promote a replica by itself before it does what an operator would, and
   * promotes one with CLUSTER FAILOVER TAKEOVER (default 30 s; a failover takes about twice nodeTimeoutMs).
   */
  failoverTimeoutMs?: number;
  /** Every node in a process group of its own, as RedisServerOptions' (a terminal's Ctrl-C does not reach them). */
  ownProcessGroup?: boolean;
}

/** Slots assigned to the master on `port`: every other live node gave them to it, its own view to no one. */
export interface Reclaimed {
  port: number;
  slots: number[];
}

export interface ClusterNodeInfo {
  id: string;
  port: number;
  role: "master" | "replica";
  /** The master's id, for a replica. */
  masterId?: string;
  failed: boolean;
  slots: number;
}

/**
 * A throw-away Redis Cluster on 127.0.0.1 (Redis 7's own cluster mode, each node a redis-server process, created
 * with `redis-cli --cluster create`), with the faults a cluster has in production: a master killed (its replica
 * takes over), a killed node brought back (it rejoins as a replica), slots migrated with
 * `redis-cli --cluster reshard`.
 */
export interface LocalRedisCluster {
  /** `127.0.0.1:<tls-port>` of every node when started with `tls`, else none: REDIS_CLUSTER_NODES over TLS. */
  tlsNodes: string[];
  /** `127.0.0.1:<port>` of every node: REDIS_CLUSTER_NODES. */
  nodes: string[];
  ports: number[];
  /** The cluster as every node sees it now (from a live node's CLUSTER NODES). */
  describe(): Promise<ClusterNodeInfo[]>;
  /**
   * SIGKILLs a master (the one on `port`, else the first serving slots) and resolves once a replica has taken over.
   * `reclaimed`: what it took `settle` to give masters (the promoted replica, as seen) that claimed too few slots.
   * `forced`: no replica was elected within `failoverTimeoutMs` (seen once in CI, after a fault model's run), so one
   * was promoted with CLUSTER FAILOVER TAKEOVER; it says what the cluster looked like then.
   */
  killMaster(port?: number): Promise<{ killed: number; promoted: number; reclaimed: Reclaimed[]; forced?: string }>;
  /**
   * The slots every other live node gives the master on `port` but its own view gives to no one, assigned to it
   * (CLUSTER ADDSLOTS, then BUMPEPOCH so the claim wins); resolves with them once the cluster has settled. What a
   * promoted replica that claimed one slot too few needs (`fix` refuses while the old master is listed as failed).
   */
  reclaimSlots(port: number): Promise<number[]>;
  /**
   * SIGKILLs a master and its replicas at once, so its slots have no node left (the cluster answers CLUSTERDOWN
   * once it notices); `restartNode` brings each back, empty.
   */
  killShard(masterPort: number): Promise<number[]>;
  /**
   * Starts a killed or stopped node again on its port; it rejoins (as a replica of whoever took its slots). Resolves
   * once the cluster has settled, with the slots it took `reclaimSlots` to give to masters that claimed too few by
   * then (none, normally).
   */
  restartNode(port: number): Promise<{ reclaimed: Reclaimed[] }>;
  /**
   * Moves `slots` slots from one master to another with `redis-cli --cluster reshard`, keys and all. One cut short
   * (killed after two minutes, or failed) has its open slots closed (`fix`) before its error is thrown.
   */
  reshard(opts: { slots: number; fromPort?: number; toPort?: number }): Promise<{ from: number; to: number }>;
  /**
   * `redis-cli --cluster fix`, answering yes: closes the slots a migration left open (multi-key scripts answer
   * TRYAGAIN until then) and covers a slot that a node's own view gives to no one (it answers CLUSTERDOWN for all its
   * slots until then); resolves once the cluster has settled.
   */
  fix(): Promise<void>;
  /**
   * Resolves when every live node says cluster_state:ok, every slot is served, no slot is being migrated and every
   * replica is in sync.
   */
  settled(): Promise<void>;
  /**
   * `settled`, but when the cluster does not settle (after its 30 s) because live masters lost slots from their own
   * view, which every other live node still gives them, those slots are assigned to them (as `reclaimSlots`) and it
   * waits again; resolves with what was assigned, and rethrows when nothing was. killMaster and restartNode wait
   * this way.
   */
  settle(): Promise<Reclaimed[]>;
  /** FLUSHALL on every live master (its replicas follow). */
  flushall(): Promise<void>;
  /** Stops every node. Safe to call twice. */
  stop(): Promise<void>;
}

export async function startRedisCluster(opts: RedisClusterOptions): Promise<LocalRedisCluster> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicasPerMaster ?? 1;
  const nodeTimeoutMs = opts.nodeTimeoutMs ?? 2000;
  const failoverTimeoutMs = opts.failoverTimeoutMs ?? SETTLE_TIMEOUT_MS;
  const servers = new Map<number, RedisServer>();
  const alive = new Set<number>();
  const stopAll = async () => {
    await Promise.allSettled([...servers.values()].map((s) => s.stop()));
    alive.clear();
  };
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      // The cluster bus listens on a port of its own (cluster-port, Redis 7), not port + 10000, which may be taken
      // or past 65535.
      const dir = path.join(opts.dir, `node-${i}`);
      await mkdir(dir, { recursive: true });
      const server = await startRedisServer({
        dir,
        keepLines: 500,
        ownProcessGroup: opts.ownProcessGroup ?? false,
        args: [
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          "nodes.conf",
          "--cluster-node-timeout",
          String(nodeTimeoutMs),
          "--cluster-port",
          String(await freePort()),
          ...(opts.tls ? tlsArgs(opts.tls, await freePort()) : []),
        ],
      });
      servers.set(server.port, server);
      alive.add(server.port);
    }
    const ports = [...servers.keys()];
    const tlsNodes = opts.tls ? await Promise.all(ports.map(async (port) => `127.0.0.1:${await tlsPortOf(port)}`)) : [];
    const nodes = ports.map((port) => `127.0.0.1:${port}`);
    await cli(["--cluster", "create", ...nodes, "--cluster-replicas", String(replicas), "--cluster-yes"]);

    const livePort = () => {
      const port = [...alive][0];
      if (port === undefined) throw new Error("no node of the local Redis Cluster is running");
      return port;
    };
    const describe = () => describeCluster(livePort());
    /** Every live node's view, and the replication state and last log lines of the nodes in `focus`. */
    const diagnose = async (focus: number[]): Promise<string> => {
      const parts = [await clusterViews([...alive])];
      for (const port of focus.filter((p) => alive.has(p))) {
        const replication = await onNode(port, (redis) => redis.info("replication")).catch(String);
        parts.push(
          `node ${port} replication:\n${replication.trim()}`,
          `node ${port} log:\n${withoutRetries(servers.get(port)!.output())}`,
        );
      }
      return parts.join("\n");
    };
    const settled = () => waitSettled([...alive]);
    /**
     * reclaimSlots without the wait for the cluster to settle: nothing unless the node on `port` is a master in its
     * own view, and only the slots every other live node gives it while its own view gives them to no one. (Redis
     * 7.0 takes ADDSLOTS on a replica too, and a replica that holds a slot keeps the cluster from settling.)
     */
    const assignMissing = async (port: number): Promise<number[]> => {
      const [me, own] = await onNode(port, async (redis) => [
        String(await redis.call("CLUSTER", "MYID")),
        String(await redis.call("CLUSTER", "NODES")),
      ]);
      if (parseClusterNodes(own).find((n) => n.id === me)?.role !== "master") return [];
      const ownedHere = new Set(parseClusterNodes(own).flatMap((n) => slotsOf(own, n.id)));
      const others = [...alive].filter((p) => p !== port);
      const givers = new Map<number, number>();
      for (const other of others) {
        const text = await onNode(other, async (redis) => String(await redis.call("CLUSTER", "NODES")));
        for (const slot of slotsOf(text, me)) givers.set(slot, (givers.get(slot) ?? 0) + 1);
      }
      const missing = [...givers]
        .filter(([slot, count]) => count === others.length && !ownedHere.has(slot))
        .map(([slot]) => slot)
        .sort((a, b) => a - b);
      if (missing.length > 0)
        await onNode(port, async (redis) => {
          await redis.call("CLUSTER", "ADDSLOTS", ...missing);
          await redis.call("CLUSTER", "BUMPEPOCH");
        });
      return missing;
    };
    const reclaimSlots = async (port: number): Promise<number[]> => {
      const missing = await assignMissing(port);
      await settled();
      return missing;
    };
    // settle(): see the interface. Seen in cluster soaks on Redis 7.0.15 (docs/scaling.md, "A promoted replica that
    // claims one slot too few"); the repair comes only once a wait has timed out (30 s).
    const settle = async (): Promise<Reclaimed[]> => {
      try {
        await settled();
        return [];
      } catch (err) {
        const reclaimed: Reclaimed[] = [];
        const failures: unknown[] = [];
        for (const port of [...alive]) {
          try {
            if (!(await coverageLost(port))) continue;
            const slots = await assignMissing(port);
            if (slots.length > 0) reclaimed.push({ port, slots });
          } catch (failure) {
            failures.push(failure);
          }
        }
        if (reclaimed.length === 0)
          throw failures.length > 0 ? new AggregateError([err, ...failures], String(err)) : err;
        logger.warn({ reclaimed }, "masters claimed too few slots; they were assigned to them");
        await settled().catch((again: unknown) => {
          throw new Error(`the cluster did not settle after slots were assigned: ${JSON.stringify(reclaimed)}`, {
            cause: again,
          });
        });
        return reclaimed;
      }
    };
    const fix = async () => {
      // --cluster-yes does not answer "cover these slots?" (redis-cli 7.0 reads it from stdin).
      await cli(["--cluster", "fix", `127.0.0.1:${livePort()}`, "--cluster-yes"], "yes\n");
      await settled();
    };
    await settled();
    logger.debug({ nodes }, "started a local Redis Cluster");

    return {
      nodes,
      tlsNodes,
      ports,
      describe,
      settled,
      settle,
      async killMaster(port) {
        const before = await describe();
        const victim = before.find(
          (n) => n.role === "master" && !n.failed && n.slots > 0 && (port ?? n.port) === n.port,
        );
        if (!victim) throw new Error(`no live master serving slots${port ? ` on port ${port}` : ""}`);
        servers.get(victim.port)!.kill("SIGKILL");
        alive.delete(victim.port);
        const probe = async () => {
          const now = await describe();
          const heir = now.find(
            (n) =>
              n.role === "master" &&
              !n.failed &&
              n.port !== victim.port &&
              n.slots > 0 &&
              before.find((b) => b.port === n.port)?.role === "replica",
          );
          return heir && now.find((n) => n.port === victim.port)?.failed ? heir.port : undefined;
        };
        const replicas = before.filter((n) => n.masterId === victim.id && alive.has(n.port)).map((n) => n.port);
        const explain = () => diagnose(replicas);
        let forced: string | undefined;
        const promoted = await until(
          probe,
          `a replica of ${victim.port} to take over`,
          explain,
          failoverTimeoutMs,
        ).catch(async (err: unknown) => {
          const heir = replicas[0];
          if (heir === undefined) throw err;
          forced = String(err);
          logger.warn({ forced }, "no replica took over a killed master; promoting one with CLUSTER FAILOVER TAKEOVER");
          await onNode(heir, (redis) => redis.call("CLUSTER", "FAILOVER", "TAKEOVER"));
          return until(probe, `replica ${heir} to take over with CLUSTER FAILOVER TAKEOVER`, explain);
        });
        return { killed: victim.port, promoted, reclaimed: await settle(), ...(forced ? { forced } : {}) };
      },
      async killShard(masterPort) {
        const nodes = await describe();
        const master = nodes.find((n) => n.port === masterPort && n.role === "master");
        if (!master) throw new Error(`no master on port ${masterPort}`);
        const ports = [master.port, ...nodes.filter((n) => n.masterId === master.id).map((n) => n.port)];
        for (const port of ports) {
          servers.get(port)!.kill("SIGKILL");
          alive.delete(port);
        }
        return ports;
      },
      async restartNode(port) {
        const server = servers.get(port);
        if (!server) throw new Error(`no node on port ${port}`);
        await server.restart();
        alive.add(port);
        await until(async () => {
          const me = (await describeCluster(port)).find((n) => n.port === port);
          return me && !me.failed && (await describe()).every((n) => !(n.port === port && n.failed)) ? true : undefined;
        }, `node ${port} to rejoin`);
        return { reclaimed: await settle() };
      },
      async reshard({ slots, fromPort, toPort }) {
        const now = await describe();
        const serving = now.filter((n) => n.role === "master" && !n.failed);
        const from = serving.find((n) => n.port === (fromPort ?? serving.find((m) => m.slots >= slots)?.port));
        const to = serving.find((n) => n.port === (toPort ?? serving.find((m) => m !== from)?.port));
        if (!from || !to || from === to) throw new Error("reshard: need two distinct live masters");
        try {
          await cli([
            "--cluster",
            "reshard",
            `127.0.0.1:${livePort()}`,
            "--cluster-from",
            from.id,
            "--cluster-to",
            to.id,
            "--cluster-slots",
            String(slots),
            "--cluster-yes",
          ]);
        } catch (err) {
          // Cut short mid-slot: its keys are split between the two masters until the slot is closed.
          await fix().catch(() => undefined);
          throw err;
        }
        await settled();
        return { from: from.port, to: to.port };
      },
      fix,
      reclaimSlots,
      async flushall() {
        const masters = (await describe()).filter((n) => n.role === "master" && !n.failed);
        await Promise.all(masters.map((m) => onNode(m.port, (redis) => redis.flushall())));
      },
      async stop() {
        await stopAll();
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** The slots the node `id` serves in one node's CLUSTER NODES (ranges expanded; slots being migrated left out). */
export function slotsOf(clusterNodes: string, id: string): number[] {
  const line = clusterNodes.split("\n").find((l) => l.startsWith(`${id} `));
  if (!line) return [];
  const slots: number[] = [];
  for (const range of line.trim().split(" ").slice(8)) {
    if (range.startsWith("[")) continue;
    const [a, b] = range.split("-").map(Number);
    for (let slot = a!; slot <= (b ?? a!); slot++) slots.push(slot);
  }
  return slots;
}

/** Whether the node on `port` sees a slot with no owner (cluster_state:fail with fewer than 16384 assigned). */
async function coverageLost(port: number): Promise<boolean> {
  const info = await onNode(port, async (redis) => String(await redis.call("CLUSTER", "INFO"))).catch(() => "");
  const assigned = /cluster_slots_assigned:(\d+)/.exec(info)?.[1];
  return assigned !== undefined && Number(assigned) < 16384;
}

async function cli(args: string[], input?: string): Promise<string> {
  try {
    const call = run("redis-cli", args, {
      maxBuffer: 16 * 1024 * 1024,
      timeout: CLI_TIMEOUT_MS,
      killSignal: "SIGKILL",
    });
    call.child.stdin?.end(input ?? "");
    const { stdout } = await call;
    return stdout;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new Error(REDIS_CLI_MISSING, { cause: err });
    const { stdout, stderr, killed } = err as { stdout?: string; stderr?: string; killed?: boolean };
    const what = killed ? `did not finish within ${CLI_TIMEOUT_MS / 1000} s` : "failed";
    throw new Error(`redis-cli ${args.slice(0, 2).join(" ")} ${what}:\n${stdout ?? ""}${stderr ?? ""}`, { cause: err });
  }
}

/** One command on one node, on a connection of its own (a node may be down: no retries, no offline queue). */
async function onNode<T>(port: number, call: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({
    port,
    host: "127.0.0.1",
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
    // A node that accepts but does not answer (stopped, or starved) fails the call instead of hanging the wait.
    commandTimeout: 5000,
  });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    return await call(redis);
  } finally {
    redis.disconnect();
  }
}

/** CLUSTER NODES, one line per node: id addr@bus flags master ping pong epoch link slot… */
export function parseClusterNodes(text: string): ClusterNodeInfo[] {
  return text
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [id, addr, flags, master, , , , , ...slots] = line.split(" ");
      const flagList = flags!.split(",");
      const replica = flagList.includes("slave");
      let count = 0;
      for (const range of slots) {
        if (range.startsWith("[")) continue; // a slot being migrated or imported
        const [a, b] = range.split("-").map(Number);
        count += b === undefined ? 1 : b - a! + 1;
      }
      return {
        id: id!,
        port: Number(addr!.split("@")[0]!.split(":").at(-1)),
        role: replica ? ("replica" as const) : ("master" as const),
        ...(replica ? { masterId: master! } : {}),
        failed: flagList.includes("fail") || flagList.includes("fail?"),
        slots: count,
      };
    });
}

function describeCluster(port: number): Promise<ClusterNodeInfo[]> {
  return onNode(port, async (redis) => parseClusterNodes(String(await redis.call("CLUSTER", "NODES"))));
}

/**
 * Who serves which slots, as one node's CLUSTER NODES says: each node's id and slot ranges, sorted (roles, flags and
 * timings left out, since they differ from node to node).
 */
export function slotOwnership(clusterNodes: string): string {
  return clusterNodes
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const fields = line.split(" ");
      return [fields[0], ...fields.slice(8)].join(" ");
    })
    .sort()
    .join("\n");
}

async function waitSettled(ports: number[]): Promise<void> {
  await until(
    async () => {
      // Every live node must also see the same owner for every slot: a master that lost a slot from its own view
      // (settle repairs it) serves it in every view but its own, and answers CLUSTERDOWN for all its slots until then.
      const views = new Set<string>();
      for (const port of ports) {
        const ok = await onNode(port, async (redis) => {
          const info = String(await redis.call("CLUSTER", "INFO"));
          if (!info.includes("cluster_state:ok") || !info.includes("cluster_slots_ok:16384")) return false;
          const replication = await redis.info("replication");
          if (replication.includes("role:slave") && !replication.includes("master_link_status:up")) return false;
          // Every live node must agree on who is failed and who serves what, and see no slot being migrated
          // ("[slot->-id]" or "[slot-<-id]" in CLUSTER NODES).
          const text = String(await redis.call("CLUSTER", "NODES"));
          if (text.includes("[")) return false;
          views.add(slotOwnership(text));
          return parseClusterNodes(text).every((n) => ports.includes(n.port) === !n.failed);
        }).catch(() => false);
        if (!ok) return undefined;
      }
      return views.size === 1 ? true : undefined;
    },
    "the local Redis Cluster to settle",
    () => clusterViews(ports),
  );
}

/** A node's last 40 lines of log but the ones it writes every second while its master is down. */
function withoutRetries(log: string): string {
  const retry = /Connecting to MASTER|MASTER <-> REPLICA sync started|Error condition on socket for SYNC/;
  return log
    .split("\n")
    .filter((line) => !retry.test(line))
    .slice(-40)
    .join("\n");
}

/** What each node on `ports` says of the cluster (CLUSTER NODES), for a failure's message. */
async function clusterViews(ports: number[]): Promise<string> {
  const views = await Promise.all(
    ports.map(async (port) => {
      const text = await onNode(port, async (redis) => String(await redis.call("CLUSTER", "NODES"))).catch(String);
      return `node ${port} sees:\n${text.trim()}`;
    }),
  );
  return views.join("\n");
}

/** `explain`, when given, adds to the time-out's message what the cluster looked like then. */
async function until<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  explain?: () => Promise<string>,
  timeoutMs = SETTLE_TIMEOUT_MS,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      const detail = explain
        ? `\n${await explain().catch((err: unknown) => `(could not say why: ${String(err)})`)}`
        : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A node's TLS port (`tls-port`) and the settings that put its cluster bus and replication on TLS. */
function tlsArgs(tls: NonNullable<RedisClusterOptions["tls"]>, port: number): string[] {
  return [
    "--tls-port",
    String(port),
    "--tls-cert-file",
    path.resolve(tls.certFile),
    "--tls-key-file",
    path.resolve(tls.keyFile),
    "--tls-ca-cert-file",
    path.resolve(tls.caFile),
    "--tls-cluster",
    "yes",
    "--tls-replication",
    "yes",
    "--tls-auth-clients",
    "no",
  ];
}

/** The TLS port of the node on plain `port`, as it says itself. */
async function tlsPortOf(port: number): Promise<number> {
  const [, value] = await onNode(port, (redis) => redis.config("GET", "tls-port") as Promise<[string, string]>);
  return Number(value);
}
