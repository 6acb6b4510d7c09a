import { defineConfig } from "prisma/config";
import { loadEnv } from "./server/env.ts";

// The standard CLI reads the connection from here; the app itself connects through the pg driver adapter
// (server/db/prisma.ts) and applies migrations with its own runner (server/db/migrate.ts). The environment is
// read and validated by the same module as every other entry point.
const env = loadEnv();

export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: {
    path: "prisma/migrations",
    seed: "tsx prisma/seed-cli.ts",
  },
  datasource: {
    url: env.DATABASE_URL ?? "postgresql://localhost:5432/tally",
  },
});
