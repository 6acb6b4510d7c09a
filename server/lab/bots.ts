import { randomUUID } from "node:crypto";
import { io, type Socket } from "socket.io-client";
import type { BotsStatus } from "../contracts/lab.ts";
import type { ClientToServerEvents, ConversationDTO, ServerToClientEvents, Snapshot } from "../contracts/index.ts";
import { rng } from "./rng.ts";

type BotSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

const LINES = [
  "On my way!",
  "Did anyone see the badge just now?",
  "Pushing the fix in five.",
  "Coffee first.",
  "The deploy is green.",
  "Who has the slides?",
  "Same time tomorrow?",
  "Looks good to me 👍",
  "Can you take a look at the PR?",
  "Lunch at noon?",
  "Running five minutes late.",
  "That count looks right to me.",
];

/** Share of bot actions that read a conversation instead of sending, so badges go down as well as up. */
const READ_SHARE = 0.25;
const ACK_TIMEOUT_MS = 5000;

interface Bot {
  name: string;
  socket: BotSocket;
  conversations: Map<number, { lastSeq: number; unread: number }>;
}

export interface BotsOptions {
  /** A Tally instance, e.g. http://127.0.0.1:3000. */
  baseUrl: string;
  /** Bot accounts to chat as, with a session token each (issued by the lab; never a person's account). */
  accounts: { name: string; token: string }[];
  /** The user who started the bots: they chat only in their direct conversations with this user. */
  ownerId: number;
  /** Messages per second across all bots. */
  rate: number;
  seed?: number;
  onChange?: (status: BotsStatus) => void;
}

export interface Bots {
  status(): BotsStatus;
  stop(): Promise<void>;
}

async function json<T>(res: Response): Promise<T> {
  const body = (await res.json()) as T & { ok: boolean; error?: { message: string } };
  if (!res.ok || !body.ok) throw new Error(body.error?.message ?? `HTTP ${res.status}`);
  return body;
}

/**
 * Demo traffic: bot accounts that connect a socket and chat through the normal services, at about
 * `rate` messages per second in all (each action waits a random, exponentially distributed time), and now and
 * then read a conversation.
 */
export async function startBots(opts: BotsOptions): Promise<Bots> {
  const random = rng(opts.seed ?? Date.now());
  const status: BotsStatus = {
    running: true,
    rate: opts.rate,
    users: opts.accounts.map((a) => a.name),
    sent: 0,
    reads: 0,
    errors: 0,
  };
  const bots: Bot[] = [];
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const inFlight = new Set<Promise<void>>();

  async function join({ name, token }: { name: string; token: string }): Promise<Bot> {
    const session = { token };
    const snapshot = await json<Snapshot>(
      await fetch(`${opts.baseUrl}/api/conversations`, { headers: { authorization: `Bearer ${session.token}` } }),
    );
    const socket: BotSocket = io(opts.baseUrl, {
      auth: { token: session.token },
      transports: ["websocket"],
      forceNew: true,
    });
    const bot: Bot = { name, socket, conversations: new Map() };
    // Only the direct conversation with the owner: a bot never posts where someone else put it.
    const track = (c: ConversationDTO) => {
      if (c.kind === "direct" && c.members.some((m) => m.id === opts.ownerId)) {
        bot.conversations.set(c.id, { lastSeq: c.lastSeq, unread: c.unreadCount });
      }
    };
    snapshot.conversations.forEach(track);
    socket.on("conversation:created", ({ conversation }) => track(conversation));
    socket.on("message:new", ({ message }) => {
      const c = bot.conversations.get(message.conversationId);
      if (c) c.lastSeq = Math.max(c.lastSeq, message.seq);
    });
    socket.on("unread:changed", (u) => {
      const c = bot.conversations.get(u.conversationId);
      if (c) c.unread = u.unreadCount;
    });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", () => resolve());
      socket.once("connect_error", reject);
    });
    return bot;
  }

  async function act(): Promise<void> {
    const active = bots.filter((b) => b.socket.connected && b.conversations.size > 0);
    const bot = active[Math.floor(random() * active.length)];
    if (!bot) return;
    const unread = [...bot.conversations].filter(([, c]) => c.unread > 0);
    const reading = unread.length > 0 && random() < READ_SHARE;
    const pool = reading ? unread : [...bot.conversations];
    const [conversationId, c] = pool[Math.floor(random() * pool.length)]!;
    const res = reading
      ? await bot.socket.timeout(ACK_TIMEOUT_MS).emitWithAck("conversation:read", { conversationId, seq: c.lastSeq })
      : await bot.socket.timeout(ACK_TIMEOUT_MS).emitWithAck("message:send", {
          conversationId,
          clientMsgId: randomUUID(),
          content: LINES[Math.floor(random() * LINES.length)]!,
        });
    if (!res.ok) throw new Error(res.error.message);
    if (reading) status.reads++;
    else status.sent++;
  }

  function schedule(): void {
    if (stopped) return;
    const wait = (-Math.log(1 - random()) * 1000) / opts.rate;
    timer = setTimeout(() => {
      const action = act().catch(() => void status.errors++);
      inFlight.add(action);
      void action.finally(() => inFlight.delete(action));
      schedule();
    }, wait);
    timer.unref?.();
  }

  try {
    for (const account of opts.accounts) bots.push(await join(account));
  } catch (err) {
    for (const b of bots) b.socket.disconnect();
    throw err;
  }
  schedule();
  const ticker = setInterval(() => opts.onChange?.({ ...status }), 1000);
  ticker.unref?.();
  opts.onChange?.({ ...status });

  return {
    status: () => ({ ...status }),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      clearInterval(ticker);
      // Let the server finish what the bots asked for before their sockets go.
      await Promise.allSettled([...inFlight]);
      for (const b of bots) b.socket.disconnect();
      status.running = false;
      opts.onChange?.({ ...status });
    },
  };
}

export const IDLE_BOTS: BotsStatus = { running: false, rate: 0, users: [], sent: 0, reads: 0, errors: 0 };
