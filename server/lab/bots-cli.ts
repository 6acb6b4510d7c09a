/**
 * `npm run bots`: demo traffic against a running Tally. Bots sign in as existing users (the demo users by
 * default) and chat in the conversations they belong to through the normal HTTP API and sockets, until Ctrl-C.
 *
 *   npm run bots -- --url http://localhost:3000 --rate 2 --users bob,carol,dave --seconds 0
 */
import { parseArgs } from "node:util";
import { z } from "zod";
import { demoUsers } from "../../prisma/seed-data.ts";
import { startBots } from "./bots.ts";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: `http://localhost:${process.env.PORT ?? 3000}` },
    rate: { type: "string", default: "2" },
    users: { type: "string", default: demoUsers.filter((n) => n !== "alice").join(",") },
    seconds: { type: "string", default: "0" },
  },
});

const options = z
  .object({
    url: z.url({ protocol: /^https?$/ }),
    rate: z.coerce.number().min(0.1).max(20),
    users: z
      .string()
      .transform((s) => s.split(",").map((n) => n.trim()))
      .pipe(z.array(z.string().regex(/^[A-Za-z0-9_-]{1,32}$/)).min(1)),
    seconds: z.coerce.number().min(0),
  })
  .safeParse(values);
if (!options.success) {
  console.error(`Invalid option: ${options.error.issues.map((i) => `--${i.path.join(".")}: ${i.message}`).join("; ")}`);
  process.exit(2);
}
const { url, rate, users, seconds } = options.data;

async function main(): Promise<void> {
  const bots = await startBots({ baseUrl: url.replace(/\/$/, ""), users, rate });
  console.log(
    `${users.join(", ")} chatting on ${url} at ~${rate} messages/s${seconds ? ` for ${seconds} s` : "; Ctrl-C stops"}.`,
  );
  const report = setInterval(() => {
    const s = bots.status();
    console.log(`sent ${s.sent}, reads ${s.reads}, errors ${s.errors}`);
  }, 5000);
  const stop = async () => {
    clearInterval(report);
    await bots.stop();
    const s = bots.status();
    console.log(`stopped: sent ${s.sent}, reads ${s.reads}, errors ${s.errors}`);
    process.exit(0);
  };
  process.on("SIGINT", () => void stop());
  process.on("SIGTERM", () => void stop());
  if (seconds > 0) setTimeout(() => void stop(), seconds * 1000);
}

main().catch((err: unknown) => {
  console.error(`bots could not start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
