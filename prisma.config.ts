import { defineConfig } from "prisma/config";

// The standard CLI reads the connection from here; the app itself connects through the pg driver adapter
// (server/db/prisma.ts) and applies migrations with its own runner (server/db/migrate.ts).
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: {
    path: "prisma/migrations",
    seed: "tsx prisma/seed-cli.ts",
  },
  datasource: {
    url: process.env.DATABASE_URL ?? "postgresql://localhost:5432/tally",
  },
});
