import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL(".", import.meta.url));

/** The integration tests that also run on a Redis Cluster (project "int-cluster"). */
const CLUSTER_SUITE = [
  "server/app.int.test.ts",
  "server/redis/scripts.int.test.ts",
  "server/outbox/relay.int.test.ts",
  "server/unread/repair.int.test.ts",
  "server/unread/state.int.test.ts",
  "server/unread/expiry.int.test.ts",
  "server/messages/mentions.int.test.ts",
  "server/security.int.test.ts",
  "server/redis/cluster.int.test.ts",
  "server/lab/runs.int.test.ts",
];

export default defineConfig({
  resolve: { alias: { "@": root } },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["server/**/*.test.ts", "components/**/*.test.ts", "scripts/**/*.test.ts"],
          exclude: ["**/*.int.test.ts", "node_modules/**"],
          environment: "node",
        },
      },
      {
        extends: true,
        test: {
          name: "int",
          include: ["server/**/*.int.test.ts", "prisma/**/*.int.test.ts"],
          globalSetup: ["./server/testing/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // Two cores: files share one PostgreSQL and one redis-server, each with its own database and key space.
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          // The core of the integration suite again, on a local Redis Cluster (3 masters + 3 replicas) instead of one
          // redis-server: scripts, fan-out, sync, relay, repair, registers, expiry, limits, both adapters' pushes.
          name: "int-cluster",
          include: CLUSTER_SUITE,
          globalSetup: ["./server/testing/global-setup-cluster.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
