import type { Server as HttpServer } from "node:http";
import type { Namespace } from "socket.io";
import type { SocketData, UserDTO } from "../contracts/index.ts";
import type {
  BotsStatus,
  LabRunResult,
  LabClientToServerEvents,
  LabInterServerEvents,
  LabServerToClientEvents,
} from "../contracts/lab.ts";
import { isUniqueViolation } from "../db/unique.ts";
import { withTimeout } from "../limits/deadline.ts";
import { oneAtATime } from "../limits/turns.ts";
import { CONFIRM_MS } from "../realtime/notifier.ts";
import { AppError, parse } from "../errors.ts";
import type { ModuleContext } from "../modules.ts";
import { endAtExpiry, joinSessionRooms } from "../sessions/socket-gate.ts";
import { answerUnknownCommands, command } from "../realtime/command.ts";
import { sessionRoom, userRoom } from "../redis/keys.ts";
import { IDLE_BOTS } from "./bots.ts";
import { createLabService } from "./lab.service.ts";
import { noInputSchema } from "../contracts/inputs.ts";
import { botsInputSchema, runInputSchema, stopInputSchema, storyInputSchema } from "./params.ts";

export type LabNamespace = Namespace<
  LabClientToServerEvents,
  LabServerToClientEvents,
  LabInterServerEvents,
  SocketData
>;

/** Where this instance answers itself (the bots connect to it like any browser). */
function selfUrl(httpServer: HttpServer): string {
  const address = httpServer.address();
  if (address === null || typeof address === "string")
    throw new AppError("unavailable", "The server is not listening.");
  const host =
    address.family === "IPv6"
      ? address.address === "::"
        ? "[::1]"
        : `[${address.address}]`
      : address.address === "0.0.0.0"
        ? "127.0.0.1"
        : address.address;
  return `http://${host}:${address.port}`;
}

/** A run's end as its watchers hear it: a Stop names no one (only the owner can stop a run). */
function forWatchers(result: LabRunResult, ownerName: string): LabRunResult {
  const { end } = result;
  return end.reason === "stopped" && end.by === ownerName ? { ...result, end: { ...end, by: "its owner" } } : result;
}

/** The bot accounts of one user: `bot-<owner id>-<k>` (people cannot sign up with names starting `bot-`). */
function botName(ownerId: number, k: number): string {
  return `bot-${ownerId}-${k}`;
}

/**
 * The consistency lab on the `/lab` Socket.IO namespace: open to any signed-in user (it only touches its own
 * redis-server, or `lab:<run>:…` keys), never to anonymous sockets. Runs report to every lab tab of the user
 * who started them, and every other lab page of the run's instance watches them; only that user can stop them. Mounted by server/lab/module.ts.
 */
export function registerLab({
  io,
  httpServer,
  redis,
  db,
  sessions,
  conversations,
  snapshots,
  notifier,
  log,
  limits,
  gate,
}: ModuleContext): {
  close(): Promise<void>;
} {
  const lab = createLabService({ sharedRedis: redis, log: log.child({ lab: true }) });
  const nsp = io.of("/lab") as unknown as LabNamespace;

  /** Sessions of each owner's running bots, revoked when the bots stop. */
  const botSessions = new Map<number, string[]>();

  /** The owner's bot accounts, each signed in and in a direct conversation with the owner. */
  async function botAccounts(owner: UserDTO, count: number) {
    const accounts: { name: string; token: string; sessionId: string }[] = [];
    for (let k = 1; k <= count; k++) {
      const name = botName(owner.id, k);
      const select = { id: true, isBot: true } as const;
      // Two instances may create the same bot at once: the one that loses the race reads the winner's row.
      const bot = await db.user
        .upsert({ where: { name }, update: {}, create: { name, isBot: true }, select })
        .catch(async (err: unknown) => {
          if (!isUniqueViolation(err)) throw err;
          return db.user.findUniqueOrThrow({ where: { name }, select });
        });
      if (!bot.isBot) throw new AppError("conflict", `${name} is not a bot account.`);
      const { conversationId, shownTo } = await conversations.create(
        owner,
        { memberNames: [name] },
        { withBots: true },
      );
      if (shownTo.length > 0) {
        const described = await snapshots.describeFor(conversationId, shownTo);
        shownTo.forEach((memberId, i) => notifier.conversationCreated(memberId, described[i]!));
      }
      const { token, sessionId } = await sessions.createSession(bot.id);
      accounts.push({ name, token, sessionId });
    }
    return accounts;
  }

  /** Stops a user's bots and ends their sessions; `confirm: false` (closing) does not wait for other instances. */
  async function stopBotsOf(ownerId: number, confirm = true) {
    const status = await lab.stopBots(ownerId);
    const ended = botSessions.get(ownerId) ?? [];
    botSessions.delete(ownerId);
    await Promise.all(ended.map((id) => sessions.revoke(id)));
    await notifier.sessionsEnded(ended, "signed_out", { confirm });
    return status;
  }

  /**
   * One `bots:start` or `bots:stop` of a user at a time on this instance: two starts at once each replaced the
   * other's bots in turn, and the bots and sessions of all but the last were left running with nobody to stop them.
   */
  const botTurn = oneAtATime<number>();

  /**
   * A user's bots run on the instance that started them, and a lab tab may be on another (another device behind
   * the balancer): stops and status reach every instance. An instance that does not answer within CONFIRM_MS is
   * left out (logged).
   */
  async function elsewhere(event: keyof LabInterServerEvents, ownerId: number): Promise<BotsStatus[]> {
    try {
      return await withTimeout(nsp.serverSideEmitWithAck(event, ownerId), CONFIRM_MS);
    } catch (err) {
      log.warn({ err, event }, "another instance did not answer about a user's bots");
      return [];
    }
  }
  // Not in the user's turn here: that instance's start or stop holds its own turn while it waits for this answer,
  // and two instances doing so at once would each wait for the other. A start here that overlaps is tracked, so
  // a later stop reaches its bots.
  nsp.on("bots:stop", (ownerId, ack) => {
    stopBotsOf(ownerId).then(ack, (err: unknown) => {
      log.warn({ err }, "stopping bots for another instance failed");
      ack(IDLE_BOTS);
    });
  });
  nsp.on("bots:status", (ownerId, ack) => ack(lab.status(ownerId).bots));
  /** Of a user's bots' statuses on several instances, the one that ran (they run on one at a time). */
  const whichRan = (statuses: BotsStatus[]) => statuses.find((s) => s.users.length > 0) ?? statuses[0] ?? IDLE_BOTS;

  nsp.use(gate(nsp));

  nsp.on("connection", (socket) => {
    const user = socket.data.user;
    const room = userRoom(user.id);
    void joinSessionRooms(socket, [room, sessionRoom(socket.data.sessionId)], sessions, log);
    answerUnknownCommands(socket);
    endAtExpiry(socket);

    socket.on(
      "lab:start",
      command(log, "lab:start", async (payload) => {
        const input = parse(runInputSchema, payload);
        const subject = { userId: user.id };
        await limits.consume("lab", subject);
        // The server has one run slot: each user's runs may hold it for so many seconds an hour (`labRun`). A start
        // costs a second; the rest of the time it held the slot is charged when it ends.
        await limits.consume("labRun", subject);
        const startedAt = Date.now();
        const charge = () => {
          const seconds = Math.floor((Date.now() - startedAt) / 1000) - 1;
          limits.charge("labRun", subject, seconds).catch((err: unknown) => log.warn({ err }, "lab: charging a run"));
        };
        // The owner's pages hear the run wherever they are connected; every other lab page on this instance (the
        // slot is the instance's) watches it, told less: not whose it is, nor why it failed.
        const watchers = () => nsp.local.except(room);
        const run = await lab
          .start(user.id, input.strategies, input.workload, {
            sampled: (sample) => {
              nsp.to(room).emit("lab:sampled", sample);
              watchers().emit("lab:watched", { kind: "sampled", sample });
            },
            finished: (result) => {
              charge();
              nsp.to(room).emit("lab:finished", result);
              watchers().emit("lab:watched", { kind: "finished", result: forWatchers(result, user.name) });
              nsp.local.emit("lab:slot", { busy: false });
            },
            failed: (runId, message) => {
              charge();
              nsp.to(room).emit("lab:failed", { runId, message });
              watchers().emit("lab:watched", { kind: "failed", runId });
              nsp.local.emit("lab:slot", { busy: false });
            },
          })
          .catch(async (err: unknown) => {
            await limits.refund("labRun", subject).catch(() => undefined);
            // A start that failed after taking the slot (its Redis did not open) freed it again: pages that asked
            // meanwhile were told it was taken. A start refused because the slot was taken changed nothing: every
            // page asking again would fetch the watched run's samples so far, for nothing.
            if (!(err instanceof AppError && err.code === "rate_limited")) nsp.local.emit("lab:slot", { busy: false });
            throw err;
          });
        // The slot is this instance's: its own pages hear it was taken (the others' have a slot of their own).
        nsp.local.emit("lab:slot", { busy: true });
        return { run };
      }),
    );

    socket.on(
      "lab:stop",
      command(log, "lab:stop", async (payload) => {
        await lab.stop(user, parse(stopInputSchema, payload).runId);
        return {};
      }),
    );

    socket.on(
      "lab:status",
      command(log, "lab:status", async (payload) => {
        parse(noInputSchema, payload);
        // An answer can carry a whole run's samples (a few hundred kB near the end of a long one).
        await limits.consume("labStatus", { userId: user.id });
        const elsewhereBots = lab.status(user.id).bots.running ? [] : await elsewhere("bots:status", user.id);
        // Read after the wait for the other instances: an event this socket got before the answer (a run's finish,
        // a slot freed) is never newer than what the answer says.
        const here = lab.status(user.id);
        return here.bots.running ? here : { ...here, bots: whichRan([...elsewhereBots, here.bots]) };
      }),
    );

    socket.on(
      "lab:replay",
      command(log, "lab:replay", async (payload) => {
        const { scenario } = parse(storyInputSchema, payload);
        await limits.consume("lab", { userId: user.id });
        return { stories: await lab.replay(scenario) };
      }),
    );

    socket.on(
      "bots:start",
      command(log, "bots:start", async (payload) => {
        const input = parse(botsInputSchema, payload);
        if (user.bot) throw new AppError("forbidden", "Bots cannot start bots.");
        await limits.consume("lab", { userId: user.id });
        return botTurn(user.id, async () => {
          // They replace the user's bots wherever those run.
          await Promise.all([stopBotsOf(user.id), elsewhere("bots:stop", user.id)]);
          const accounts = await botAccounts(user, input.count);
          botSessions.set(
            user.id,
            accounts.map((a) => a.sessionId),
          );
          const bots = await lab.startBots(user.id, {
            baseUrl: selfUrl(httpServer),
            accounts,
            ownerId: user.id,
            rate: input.rate,
            onChange: (status) => nsp.to(room).emit("bots:changed", status),
          });
          return { bots };
        });
      }),
    );

    socket.on(
      "bots:stop",
      command(log, "bots:stop", async (payload) => {
        parse(noInputSchema, payload);
        const [here, there] = await Promise.all([
          botTurn(user.id, () => stopBotsOf(user.id)),
          elsewhere("bots:stop", user.id),
        ]);
        return { bots: whichRan([here, ...there]) };
      }),
    );
  });

  return {
    close: async () => {
      await Promise.all([...botSessions.keys()].map((ownerId) => stopBotsOf(ownerId, false)));
      await lab.close();
    },
  };
}
