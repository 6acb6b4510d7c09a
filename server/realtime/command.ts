import type { ClientToServerEvents, Result } from "../contracts/index.ts";
import { AppError, toApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { TallyServer, TallySocket } from "./types.ts";

/**
 * Wraps a socket command: ignores calls without an acknowledgement (nobody could be told the outcome),
 * and turns every failure into a typed `{ ok: false, error }`.
 */
export function command<T extends object>(
  log: Logger,
  name: string,
  run: (payload: unknown) => Promise<T>,
  /** Told each answered call's outcome: "ok" or the error code. */
  observe?: (outcome: string) => void,
): (...args: unknown[]) => void {
  return (...args: unknown[]) => {
    const ack = args[args.length - 1];
    if (typeof ack !== "function") return;
    const payload = args.length > 1 ? args[0] : undefined;
    // A command takes one payload at most: more arguments are a malformed call, not something to ignore.
    const ran =
      args.length > 2
        ? Promise.reject(new AppError("invalid", "A command takes one payload and an acknowledgement."))
        : run(payload);
    ran.then(
      (value) => {
        observe?.("ok");
        (ack as (r: Result<T>) => void)({ ok: true, ...value });
      },
      (err: unknown) => {
        const error = toApiError(err);
        if (error.code === "unavailable") log.error({ err, command: name }, "command failed");
        observe?.(error.code);
        (ack as (r: Result<T>) => void)({ ok: false, error });
      },
    );
  };
}

/** The commands each server is running, so that closing it can wait for them before the database goes. */
const running = new WeakMap<object, Set<Promise<unknown>>>();

/** Who hears of each answered command on a server (its /metrics), by the code it was answered with. */
const observers = new WeakMap<object, (command: string, outcome: string) => void>();

/** Tells `observe` the outcome ("ok" or the error code) of every command answered on `server`. */
export function observeCommands(server: TallyServer, observe: (command: string, outcome: string) => void): void {
  observers.set(server, observe);
}

/** Handles the command `event` on `socket` with `run` (see `command`). */
export function onCommand<T extends object>(
  socket: TallySocket,
  log: Logger,
  event: keyof ClientToServerEvents,
  run: (payload: unknown) => Promise<T>,
): void {
  const server = socket.nsp.server;
  let set = running.get(server);
  if (!set) running.set(server, (set = new Set()));
  const inFlight = set;
  socket.on(
    event,
    command(
      log,
      event,
      (payload) => {
        const p = run(payload);
        inFlight.add(p);
        const settled = () => void inFlight.delete(p);
        p.then(settled, settled);
        return p;
      },
      (outcome) => observers.get(server)?.(event, outcome),
    ),
  );
}

/** Resolves once every command running on `server` now has settled (its own outcome is answered elsewhere). */
export async function commandsSettled(server: TallyServer): Promise<void> {
  await Promise.allSettled([...(running.get(server) ?? [])]);
}

/**
 * Answers a command nobody handles on `socket` (an unknown event sent with an acknowledgement) with `not_found`,
 * so the client is told at once instead of waiting for an answer that never comes.
 */
export function answerUnknownCommands(socket: {
  onAny(listener: (event: string, ...args: unknown[]) => void): unknown;
  listenerCount(event: string): number;
}): void {
  socket.onAny((event, ...args) => {
    const ack = args[args.length - 1];
    // "error" has a listener of Socket.IO's own (a no-op), yet no command of Tally's answers it.
    if (typeof ack !== "function" || (event !== "error" && socket.listenerCount(event) > 0)) return;
    (ack as (r: Result) => void)({ ok: false, error: { code: "not_found", message: "There is no such command." } });
  });
}
