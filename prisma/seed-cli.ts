import { createDb } from "../server/db/prisma.ts";
import { loadEnv } from "../server/env.ts";
import { seedDemo } from "./seed.ts";

const url = loadEnv().DATABASE_URL;
if (!url) {
  console.error("DATABASE_URL is not set. `npm start` seeds its embedded database by itself.");
  process.exit(1);
}
const db = createDb(url);
console.log((await seedDemo(db)) ? "Seeded the demo users and conversations." : "Demo data already present.");
await db.$disconnect();
