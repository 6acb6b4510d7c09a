import { EventEmitter } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import { whenConnected } from "./when-connected";

class FakeSocket extends EventEmitter {
  connected = false;
  connect() {
    this.connected = true;
    this.emit("connect");
  }
}

afterEach(() => vi.useRealTimers());

describe("whenConnected", () => {
  it("answers at once for a connected socket, and waits for one that is still connecting", async () => {
    const socket = new FakeSocket();
    socket.connected = true;
    await expect(whenConnected(socket, 1000)).resolves.toBe(socket);

    const connecting = new FakeSocket();
    let ready = false;
    const waiting = whenConnected(connecting, 1000).then(() => (ready = true));
    await Promise.resolve();
    expect(ready).toBe(false);
    connecting.connect();
    await waiting;
    expect(ready).toBe(true);
    expect(connecting.listenerCount("connect")).toBe(0);
  });

  it("gives up after its time, and stops listening", async () => {
    vi.useFakeTimers();
    const socket = new FakeSocket();
    const waiting = whenConnected(socket, 1000);
    vi.advanceTimersByTime(1000);
    await expect(waiting).rejects.toThrow("not connected");
    expect(socket.listenerCount("connect")).toBe(0);
  });
});
