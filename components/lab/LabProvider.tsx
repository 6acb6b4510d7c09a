"use client";

import { createContext, useContext, useEffect, useState, type ReactNode } from "react";
import { io, type Socket } from "socket.io-client";
import { useStore } from "zustand";
import type { LabClientToServerEvents, LabServerToClientEvents } from "@/server/contracts";
import { whenConnected } from "@/components/lib/when-connected";
import { followNetwork } from "@/components/lib/network";
import { createLabStore, type LabState, type LabStore, type LabTransport } from "./store";

type LabSocket = Socket<LabServerToClientEvents, LabClientToServerEvents>;

const ACK_TIMEOUT_MS = 10_000;
// Story replays start a redis-server and run four strategies.
const REPLAY_TIMEOUT_MS = 60_000;

function createLabLink() {
  let socket: LabSocket | null = null;
  // A click right after the page loads, while the socket still connects, waits for it (it answered "No answer
  // from the server." at once, seen in CI).
  const live = (): Promise<LabSocket> =>
    socket ? whenConnected(socket, ACK_TIMEOUT_MS) : Promise.reject(new Error("not connected"));
  const transport: LabTransport = {
    start: async (input) => (await live()).timeout(ACK_TIMEOUT_MS).emitWithAck("lab:start", input),
    stop: async (runId) => (await live()).timeout(ACK_TIMEOUT_MS).emitWithAck("lab:stop", { runId }),
    status: async () => (await live()).timeout(ACK_TIMEOUT_MS).emitWithAck("lab:status"),
    replay: async (scenario) => (await live()).timeout(REPLAY_TIMEOUT_MS).emitWithAck("lab:replay", { scenario }),
    startBots: async (input) => (await live()).timeout(ACK_TIMEOUT_MS).emitWithAck("bots:start", input),
    stopBots: async () => (await live()).timeout(ACK_TIMEOUT_MS).emitWithAck("bots:stop"),
  };
  return {
    transport,
    attach: (next: LabSocket) => void (socket = next),
    detach: () => void (socket = null),
  };
}

const LabStoreContext = createContext<LabStore | null>(null);

export function useLabStore<T>(selector: (state: LabState) => T): T {
  const store = useContext(LabStoreContext);
  if (!store) throw new Error("useLabStore must be used inside <LabProvider>");
  return useStore(store, selector);
}

/** Owns the `/lab` socket (authenticated by the session cookie) and turns its events into store actions. */
export function LabProvider({ children }: { children: ReactNode }) {
  const [{ store, link }] = useState(() => {
    const link = createLabLink();
    return { link, store: createLabStore(link.transport) };
  });

  useEffect(() => {
    const socket: LabSocket = io("/lab", { transports: ["websocket", "polling"], withCredentials: true });
    link.attach(socket);
    const state = store.getState;
    // Answers come in the order asked, so the last one, asked after the last change heard, is what holds.
    const askStatus = () =>
      socket
        .timeout(ACK_TIMEOUT_MS)
        .emitWithAck("lab:status")
        .then(
          (res) => res.ok && state().receiveStatus(res),
          () => undefined,
        );
    socket.on("connect", () => {
      state().setConnection("connected");
      void askStatus();
    });
    socket.on("lab:slot", () => void askStatus());
    socket.on("disconnect", () => state().setConnection("offline"));
    socket.on("connect_error", (err) => {
      const code = (err as Error & { data?: { code?: string } }).data?.code;
      if (err.message === "Invalid namespace") {
        // LAB=0: the server has no /lab namespace; retrying would not change that.
        socket.disconnect();
        state().setConnection("disabled");
      } else state().setConnection(code === "unauthorized" ? "signedOut" : "offline");
    });
    // As the chat's provider does: offline at once, not after a missed ping (some 45 s of "running" over frozen
    // charts on a localhost server), and a fresh attempt once back online.
    const stopFollowing = followNetwork(socket);
    socket.on("lab:sampled", (sample) => state().receiveSample(sample));
    socket.on("lab:finished", (result) => state().receiveFinished(result));
    socket.on("lab:failed", ({ runId, message }) => state().receiveFailed(runId, message));
    socket.on("lab:watched", (event) => state().receiveWatched(event));
    socket.on("bots:changed", (bots) => state().receiveBots(bots));
    socket.on("session:ended", (payload) => state().receiveSessionEnded(payload?.reason));
    return () => {
      stopFollowing();
      link.detach();
      socket.removeAllListeners();
      socket.disconnect();
    };
  }, [store, link]);

  return <LabStoreContext.Provider value={store}>{children}</LabStoreContext.Provider>;
}
