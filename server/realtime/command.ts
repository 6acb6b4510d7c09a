import type { ClientToServerEvents, Result } from "../contracts/index.ts";
import { toApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { TallySocket } from "./types.ts";

/**
 * Wraps a socket command: ignores calls without an acknowledgement (nobody could be told the outcome),
 * and turns every failure into a typed `{ ok: false, error }`.
 */
export function command<T extends object>(
  log: Logger,
  name: string,
  run: (payload: unknown) => Promise<T>,
): (...args: unknown[]) => void {
  return (...args: unknown[]) => {
    const ack = args[args.length - 1];
    if (typeof ack !== "function") return;
    const payload = args.length > 1 ? args[0] : undefined;
    run(payload).then(
      (value) => (ack as (r: Result<T>) => void)({ ok: true, ...value }),
      (err: unknown) => {
        const error = toApiError(err);
        if (error.code === "unavailable") log.error({ err, command: name }, "command failed");
        (ack as (r: Result<T>) => void)({ ok: false, error });
      },
    );
  };
}

/** Handles the command `event` on `socket` with `run` (see `command`). */
export function onCommand<T extends object>(
  socket: TallySocket,
  log: Logger,
  event: keyof ClientToServerEvents,
  run: (payload: unknown) => Promise<T>,
): void {
  socket.on(event, command(log, event, run));
}
