import { io, type Socket } from "socket.io-client";
import type { ClientToServerEvents, ServerToClientEvents, Snapshot, UnreadUpdate } from "../../contracts/index.ts";

type ClientSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

/**
 * One simulated browser tab: a real socket.io client that keeps unread state by the documented client rule
 * (docs/protocol.md) and checks, after every update it applies, that its total equals the sum of its
 * conversation unreads.
 */
export class SimTab {
  epoch: string | null = null;
  version = 0;
  total = 0;
  counts = new Map<number, number>();
  applied = 0;
  syncs = 0;
  private socket: ClientSocket | null = null;
  private syncing: Promise<void> | null = null;
  private buffered: UnreadUpdate[] = [];
  private closed = false;

  constructor(
    readonly name: string,
    private readonly token: string,
    private readonly violations: string[],
  ) {}

  get connected(): boolean {
    return this.socket?.connected ?? false;
  }

  async connect(url: string): Promise<void> {
    this.socket?.disconnect();
    this.closed = false;
    const socket: ClientSocket = io(url, {
      auth: { token: this.token },
      transports: ["websocket"],
      forceNew: true,
      reconnection: false,
      timeout: 5000,
    });
    this.socket = socket;
    socket.on("unread:changed", (u) => this.receive(u));
    socket.on("unread:stale", () => void this.sync());
    // Another operation may close this tab while it connects: that must end the wait too.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("connect timeout")), 10_000);
      socket.once("connect", () => (clearTimeout(timer), resolve()));
      socket.once("connect_error", (err) => (clearTimeout(timer), reject(err)));
      socket.once("disconnect", () => (clearTimeout(timer), reject(new Error("closed while connecting"))));
    });
    await this.sync();
  }

  close(): void {
    this.closed = true;
    this.socket?.disconnect();
    this.socket = null;
  }

  /** The rule: apply version local+1 of the same epoch, ignore older, resync on a gap or a new epoch. */
  receive(u: UnreadUpdate): void {
    if (this.syncing || this.epoch === null) {
      this.buffered.push(u);
      void this.sync();
      return;
    }
    if (u.epoch === this.epoch && u.version <= this.version) return;
    if (u.epoch !== this.epoch || u.version > this.version + 1) {
      this.buffered.push(u);
      void this.sync();
      return;
    }
    this.counts.set(u.conversationId, u.unreadCount);
    this.total = u.totalUnread;
    this.version = u.version;
    this.applied++;
    this.check(`after update v${u.version}`);
  }

  private check(when: string): void {
    const sum = [...this.counts.values()].reduce((a, b) => a + b, 0);
    if (sum !== this.total) this.violations.push(`${this.name} ${when}: total ${this.total} != sum ${sum}`);
  }

  sync(): Promise<void> {
    this.syncing ??= this.runSync().finally(() => {
      this.syncing = null;
    });
    return this.syncing;
  }

  private async runSync(): Promise<void> {
    for (let attempt = 0; attempt < 50 && !this.closed; attempt++) {
      const socket = this.socket;
      if (!socket?.connected) return;
      let snapshot: Snapshot;
      try {
        const res = await socket.timeout(5000).emitWithAck("sync");
        if (!res.ok) throw new Error(res.error.code);
        snapshot = res.snapshot;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      this.syncs++;
      this.epoch = snapshot.epoch;
      this.version = snapshot.version;
      this.total = snapshot.totalUnread;
      this.counts = new Map(snapshot.conversations.map((c) => [c.id, c.unreadCount]));
      this.check("after sync");
      // Updates that arrived during the sync: apply those that follow the snapshot, in order.
      const pending = this.buffered.filter((u) => u.epoch === this.epoch && u.version > this.version);
      this.buffered = [];
      pending.sort((a, b) => a.version - b.version);
      let gap = false;
      for (const u of pending) {
        if (u.version <= this.version) continue;
        if (u.version > this.version + 1) {
          gap = true;
          break;
        }
        this.counts.set(u.conversationId, u.unreadCount);
        this.total = u.totalUnread;
        this.version = u.version;
        this.applied++;
        this.check(`after buffered update v${u.version}`);
      }
      if (!gap) return;
    }
  }

  send(conversationId: number, clientMsgId: string, content: string) {
    const socket = this.socket;
    if (!socket?.connected) return Promise.reject(new Error("not connected"));
    return socket.timeout(5000).emitWithAck("message:send", { conversationId, clientMsgId, content });
  }

  async read(conversationId: number, seq: number) {
    const socket = this.socket;
    if (!socket?.connected) throw new Error("not connected");
    const res = await socket.timeout(5000).emitWithAck("conversation:read", { conversationId, seq });
    if (res.ok) {
      if (res.changed) this.receive(res.unread);
      // A read that changed nothing reports the current state: only a sign that this tab may be behind.
      else if (res.unread.epoch !== this.epoch || res.unread.version > this.version) void this.sync();
    }
    return res;
  }
}
