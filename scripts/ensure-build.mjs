// Builds the Next.js app only when the last build is missing or older than its sources, so `npm run test:e2e`
// does not pay for a full `next build` on every run.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SOURCES = [
  "app",
  "components",
  "public",
  "server/contracts",
  "next.config.js",
  "next.config.mjs",
  "next.config.ts",
];

function mtime(file) {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

/** The first file under `entry` modified after `since`, or undefined. */
function newerThan(entry, since) {
  let info;
  try {
    info = statSync(entry);
  } catch {
    return undefined;
  }
  if (!info.isDirectory()) return info.mtimeMs > since ? entry : undefined;
  for (const child of readdirSync(entry)) {
    const found = newerThan(path.join(entry, child), since);
    if (found) return found;
  }
  return undefined;
}

const builtAt = mtime(path.join(root, ".next", "BUILD_ID"));
let reason;
if (builtAt === undefined) {
  reason = "no build yet (.next/BUILD_ID is missing)";
} else {
  for (const source of SOURCES) {
    const changed = newerThan(path.join(root, source), builtAt);
    if (changed) {
      reason = `${path.relative(root, changed)} changed since the last build`;
      break;
    }
  }
}

if (reason === undefined) {
  console.log("Next.js build is current; skipping next build.");
  process.exit(0);
}

console.log(`Building Next.js: ${reason}.`);
const result = spawnSync("npx", ["next", "build"], {
  cwd: root,
  stdio: "inherit",
  env: { NEXT_TELEMETRY_DISABLED: "1", ...process.env },
});
if (result.error) console.error(result.error.message);
process.exit(result.status ?? 1);
