/**
 * `npm run bots`: demo traffic against a running Tally. Signs in as a user (the demo account alice by default)
 * and starts that user's lab bots, which chat with them in direct conversations until Ctrl-C.
 *
 *   npm run bots -- --url http://localhost:3000 --name alice --password tally-demo --rate 2 --count 3 --seconds 0
 */
import { parseArgs } from "node:util";
import { io, type Socket } from "socket.io-client";
import { z } from "zod";
import { DEMO_PASSWORD } from "../../prisma/seed-data.ts";
import type { SessionResponse } from "../contracts/index.ts";
import { userName } from "../contracts/inputs.ts";
import { loadEnv } from "../env.ts";
import type { LabClientToServerEvents, LabServerToClientEvents } from "../contracts/lab.ts";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: `http://localhost:${loadEnv().PORT}` },
    name: { type: "string", default: "alice" },
    password: { type: "string", default: DEMO_PASSWORD },
    rate: { type: "string", default: "2" },
    count: { type: "string", default: "3" },
    seconds: { type: "string", default: "0" },
  },
});

const options = z
  .object({
    url: z.url({ protocol: /^https?$/ }).transform((u) => u.replace(/\/$/, "")),
    name: userName,
    password: z.string().min(8),
    rate: z.coerce.number().min(0.1).max(20),
    count: z.coerce.number().int().min(1).max(5),
    seconds: z.coerce.number().min(0),
  })
  .safeParse(values);
if (!options.success) {
  console.error(`Invalid option: ${options.error.issues.map((i) => `--${i.path.join(".")}: ${i.message}`).join("; ")}`);
  process.exit(2);
}
const { url, name, password, rate, count, seconds } = options.data;

async function main(): Promise<void> {
  const res = await fetch(`${url}/api/session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, password }),
  });
  const session = (await res.json()) as SessionResponse & { ok: boolean; error?: { message: string } };
  if (!session.ok) throw new Error(`sign-in as ${name} failed: ${session.error?.message ?? res.status}`);

  const lab: Socket<LabServerToClientEvents, LabClientToServerEvents> = io(`${url}/lab`, {
    auth: { token: session.token },
    transports: ["websocket"],
  });
  await new Promise<void>((resolve, reject) => {
    lab.once("connect", resolve);
    lab.once("connect_error", reject);
  });
  const started = await lab.timeout(30_000).emitWithAck("bots:start", { rate, count });
  if (!started.ok) throw new Error(started.error.message);
  console.log(
    `${started.bots.users.join(", ")} chatting with ${name} on ${url} at ~${rate} messages/s${seconds ? ` for ${seconds} s` : "; Ctrl-C stops"}.`,
  );
  lab.on("bots:changed", (s) => console.log(`sent ${s.sent}, reads ${s.reads}, errors ${s.errors}`));
  const stop = async () => {
    const stopped = await lab.timeout(30_000).emitWithAck("bots:stop");
    if (stopped.ok) console.log(`stopped: sent ${stopped.bots.sent}, reads ${stopped.bots.reads}`);
    lab.disconnect();
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
