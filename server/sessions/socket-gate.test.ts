import { afterEach, describe, expect, it, vi } from "vitest";
import { pino } from "pino";
import type { Socket } from "socket.io";
import { AppError } from "../errors.ts";
import { endAtExpiry, requireSession } from "./socket-gate.ts";
import type { Authenticated, SessionService } from "./sessions.service.ts";

const log = pino({ level: "silent" });

const session: Authenticated = {
  user: { id: 7, name: "gate_user" },
  sessionId: "s-7",
  expiresAt: new Date("2026-12-27T00:00:00Z"),
};
const sessions = { authenticate: async () => session } as unknown as SessionService;

/** What the gate reads of a handshake, and whether its connection is still open. */
function handshake(): Socket {
  return {
    handshake: { auth: { token: "t".repeat(43) }, headers: {} },
    conn: { readyState: "open" },
    data: {},
    nsp: { name: "/" },
  } as unknown as Socket;
}

/** Runs the middleware on `socket` and resolves with what it passed to `next`. */
function admitted(middleware: ReturnType<typeof requireSession>, socket: Socket): Promise<Error | undefined> {
  return new Promise((resolve) => middleware(socket, resolve));
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("the socket gate's per-user cap", () => {
  it("refuses a handshake with `unavailable` when the count of the user's sockets does not come within 5 s", async () => {
    vi.useFakeTimers();
    // An instance that never answers (the adapter's own timeout starts only once Redis has answered).
    const countSockets = vi.fn(() => new Promise<number>(() => undefined));
    const gate = requireSession(sessions, log, { countSockets, maxSockets: 3 });
    let outcome: Error | undefined | "pending" = "pending";
    void admitted(gate, handshake()).then((err) => (outcome = err));

    await vi.advanceTimersByTimeAsync(4_999);
    expect(countSockets).toHaveBeenCalledTimes(1);
    expect(outcome).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome).toMatchObject({ message: "unavailable", data: { code: "unavailable" } });

    // The user is not stuck behind it: the next handshake is counted, and admitted when the count comes.
    countSockets.mockImplementation(async () => 0);
    const next = handshake();
    expect(await admitted(gate, next)).toBeUndefined();
    expect(next.data).toMatchObject({ user: session.user, sessionId: "s-7" });
  });

  it("does not count a handshake whose client closed while it waited for its turn", async () => {
    const first = deferred<number>();
    const countSockets = vi.fn<(userId: number) => Promise<number>>(() => first.promise);
    const gate = requireSession(sessions, log, { countSockets, maxSockets: 3 });

    const a = handshake();
    const b = handshake();
    const aDone = admitted(gate, a);
    await vi.waitFor(() => expect(countSockets).toHaveBeenCalledTimes(1));
    const bDone = admitted(gate, b);
    // b's client goes away while a's count is out (a tab closed during a slow handshake).
    (b.conn as { readyState: string }).readyState = "closed";
    countSockets.mockImplementation(async () => 1);
    first.resolve(0);

    expect(await aDone).toBeUndefined();
    expect(await bDone).toMatchObject({ data: { code: "unavailable" } });
    expect(countSockets).toHaveBeenCalledTimes(1);
    expect(b.data).toEqual({});
  });

  it("counts a user's handshakes one at a time, each after the one before was admitted", async () => {
    // The count is what the cap's rooms hold: each admitted handshake joins them (as app.ts's handler does).
    let joined = 0;
    const countSockets = vi.fn(async () => joined);
    const gate = requireSession(sessions, log, { countSockets, maxSockets: 2 });
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, () =>
        admitted(gate, handshake()).then((err) => {
          if (!err) joined++;
          return err;
        }),
      ),
    );
    expect(outcomes.filter((err) => err === undefined)).toHaveLength(2);
    expect(outcomes.filter((err) => err !== undefined)).toEqual(
      Array.from({ length: 3 }, () =>
        expect.objectContaining({ data: expect.objectContaining({ code: "rate_limited" }) }),
      ),
    );
  });
});

describe("the socket gate's limit on handshakes without a valid session", () => {
  it("looks up no session from an address over the limit, and charges only the handshakes that fail", async () => {
    let valid = false;
    const authenticate = vi.fn(async () => (valid ? session : null));
    // The limit as Limits keeps it: two failures per address, then the address is refused from memory.
    const failed = new Map<string, number>();
    const limits = {
      consume: vi.fn(async (_name: string, { address }: { address: string }) => {
        failed.set(address, (failed.get(address) ?? 0) + 1);
        if (failed.get(address)! > 2) throw new AppError("rate_limited", "Too many.", 1_000);
      }),
      refuseIfBlocked: (_name: string, { address }: { address: string }) => {
        if ((failed.get(address) ?? 0) > 2) throw new AppError("rate_limited", "Too many.", 900);
      },
    };
    const gate = requireSession({ authenticate } as unknown as SessionService, log, {
      failures: { limits, addressOf: (socket) => socket.handshake.address },
    });
    const from = (address: string) => {
      const socket = handshake();
      (socket.handshake as { address: string }).address = address;
      return admitted(gate, socket);
    };

    for (let i = 0; i < 3; i++) expect(await from("198.51.100.1")).toMatchObject({ data: { code: "unauthorized" } });
    expect(authenticate).toHaveBeenCalledTimes(3);
    valid = true;
    expect(await from("198.51.100.1")).toMatchObject({
      message: "rate_limited",
      data: { code: "rate_limited", retryAfterMs: 900 },
    });
    expect(authenticate).toHaveBeenCalledTimes(3);
    // Another address is looked up and admitted, and an admitted handshake is not charged.
    expect(await from("198.51.100.2")).toBeUndefined();
    expect(limits.consume).toHaveBeenCalledTimes(3);
  });
});

describe("the socket gate and the user a tab shows", () => {
  it("refuses a handshake that names a user other than its session's, uncharged, and admits one naming its own", async () => {
    // The cookie is the browser's: another tab signed someone else in while this one was offline.
    const consume = vi.fn(async () => undefined);
    const gate = requireSession(sessions, log, {
      failures: { limits: { consume, refuseIfBlocked: () => undefined }, addressOf: () => "198.51.100.9" },
    });
    const naming = (userId: unknown) => {
      const socket = handshake();
      (socket.handshake.auth as Record<string, unknown>).userId = userId;
      return socket;
    };

    const other = naming(8);
    expect(await admitted(gate, other)).toMatchObject({ message: "unauthorized", data: { code: "unauthorized" } });
    expect(other.data).toEqual({});
    // Not a guess at a session: the address is not charged for it.
    expect(consume).not.toHaveBeenCalled();

    const own = naming(7);
    expect(await admitted(gate, own)).toBeUndefined();
    expect(own.data).toMatchObject({ user: session.user });
    // A client that names nobody (the lab, the bots, an older page) is admitted as before.
    expect(await admitted(gate, handshake())).toBeUndefined();
  });
});

describe("endAtExpiry", () => {
  /**
   * A connected socket whose session expires at `expiresAt`; `ended` says whether the server disconnected it, `heard`
   * what it was sent and the disconnect, in order.
   */
  function connected(expiresAt: number) {
    const state = { ended: false, heard: [] as unknown[], closeHandlers: [] as (() => void)[] };
    const socket = {
      data: { expiresAt },
      emit: (...args: unknown[]) => state.heard.push(args),
      disconnect: () => {
        state.ended = true;
        state.heard.push("disconnect");
        for (const h of state.closeHandlers) h();
      },
      once: (_event: "disconnect", handler: () => void) => state.closeHandlers.push(handler),
    } as unknown as Socket;
    return { socket, state };
  }

  it("disconnects at the session's expiry, also one beyond the longest delay a Node timer takes", async () => {
    vi.useFakeTimers({ now: 0 });
    const day = 24 * 3600 * 1000;
    const { socket, state } = connected(30 * day);
    endAtExpiry(socket);
    // A timer for 30 days would fire at once (Node clamps delays over 2^31 - 1 ms to 1 ms).
    await vi.advanceTimersByTimeAsync(25 * day);
    expect(state.ended).toBe(false);
    await vi.advanceTimersByTimeAsync(5 * day - 1);
    expect(state.ended).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(state.ended).toBe(true);
    expect(state.heard).toEqual([["session:ended", { reason: "expired" }], "disconnect"]);
  });

  it("disconnects at once a socket whose session has already expired, and sets no timer for a closed one", async () => {
    vi.useFakeTimers({ now: 1_000 });
    const expired = connected(1_000);
    endAtExpiry(expired.socket);
    expect(expired.state.ended).toBe(true);

    const closed = connected(5_000);
    endAtExpiry(closed.socket);
    for (const h of closed.state.closeHandlers) h(); // the client left first
    expect(vi.getTimerCount()).toBe(0);
  });
});
