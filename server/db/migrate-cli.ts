import { loadEnv } from "../env.ts";
import { migrate } from "./migrate.ts";

const databaseUrl = loadEnv().DATABASE_URL;
if (!databaseUrl) {
  console.error(
    "DATABASE_URL is not set. Example: DATABASE_URL=postgresql://user:pass@localhost:5432/tally npm run db:migrate",
  );
  process.exit(1);
}

try {
  const { applied } = await migrate(databaseUrl);
  if (applied.length === 0) {
    console.log("No pending migrations: the database is up to date.");
  } else {
    console.log(`Applied ${applied.length} migration(s):`);
    for (const name of applied) console.log(`  ${name}`);
  }
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
}
