// Runs `prisma generate` after install. Generating needs no schema engine, and the engine binary cannot be
// downloaded everywhere, so point the CLI at a no-op one for this command only (never for migrate).
import { spawnSync } from "node:child_process";

const env = { ...process.env };
env.PRISMA_SCHEMA_ENGINE_BINARY ??= "/bin/true";
env.PRISMA_HIDE_UPDATE_MESSAGE = "1";
const result = spawnSync("npx", ["--no-install", "prisma", "generate"], { stdio: "inherit", env });
process.exit(result.status ?? 1);
