import { io } from "socket.io-client";
import { createApi, sessionTransport } from "../../../components/lib/api.ts";
import { memoryStorage } from "../../../components/store/drafts.ts";
import {
  createChatStore,
  type ChatState,
  type ChatStore,
  type ChatTransport,
} from "../../../components/store/index.ts";
import {
  bindSocket,
  createSocketLink,
  type ChatSocket,
  type SocketLink,
} from "../../../components/store/socket-binding.ts";
import { checkUnreadInvariants, storeUnreadRows, unreadRowIds } from "../../../components/store/unread.ts";
import type { UnreadUpdate } from "../../contracts/index.ts";
import type { Journal } from "./journal.ts";

export interface TabUser {
  id: number;
  name: string;
  token: string;
}

export interface BrowserTabOptions {
  name: string;
  user: TabUser;
  journal: Journal;
  /**
   * The instance HTTP requests reach, given the one this tab's socket uses: a page's requests go to its origin, and
   * a load balancer sends them to a live instance when that one is down.
   */
  route: (socketUrl: string) => string;
  /** When set, a lost connection moves the tab to this instance (a load balancer routing away from a dead one). */
  failover?: () => string;
  /** The conversation list's page size (the store's `listPage`); the page's own when unset. */
  listPage?: number;
}

/**
 * One browser tab in the simulation: the page's own store (`createChatStore`), its own socket binding and HTTP
 * client (components/store/socket-binding.ts, components/lib/api.ts) over a real socket.io-client connection to one
 * server instance. Only opening the socket differs from the page: a token instead of the cookie, and the Origin
 * header a page would send. The tab watches every state the store takes and reports to the journal what must
 * never be seen: totals that break checkUnreadInvariants (the badge is not Σ (muted ? mentions : unread), or the
 * mentions total not Σ mentions), a count that drops although nobody read, a conversation that disappears although
 * nobody left or deleted it. Its person looks at the bottom of the open conversation
 * (`view`), so what arrives there is read as soon as the tab is visible and focused.
 */
export class BrowserTab {
  readonly name: string;
  store: ChatStore;
  /** The instance the socket is (or was last) connected to. */
  url = "";
  /** Transport calls sent and not yet answered. */
  inflight = 0;
  /** Pages of older conversations this tab loaded, over its reloads. */
  pages = 0;
  /** The last client message id this tab's store took: deterministic, so a replay sends the same ids. */
  lastId = "";
  private readonly user: TabUser;
  private readonly journal: Journal;
  private readonly options: BrowserTabOptions;
  private link: SocketLink;
  private unbind: (() => void) | null = null;
  private unsubscribe: () => void = () => {};
  private capture: Promise<unknown>[] | null = null;
  private ids = 0;
  /** The tab's sessionStorage: it outlives a reload, so the new page restores the send queue as a browser's does. */
  private readonly sessionStorage = memoryStorage();
  /** Resolves when the page is unloaded (reload, close): its pending promises never settle, as in a browser. */
  private unloaded!: Promise<void>;
  private unload: () => void = () => {};

  constructor(options: BrowserTabOptions) {
    this.options = options;
    this.name = options.name;
    this.user = options.user;
    this.journal = options.journal;
    [this.store, this.link] = this.newPage();
  }

  /** Loads the page: restores the session over HTTP, then opens the socket to `url`. */
  async load(url: string): Promise<void> {
    this.url = url;
    await this.store.getState().restoreSession();
    this.store.getState().setVisible(true);
    this.connect(url);
  }

  /** A reload: a fresh page (a new store) connecting to `url`. */
  async reload(url: string): Promise<void> {
    this.close();
    [this.store, this.link] = this.newPage();
    await this.load(url);
  }

  /** The connection drops and comes back on another instance; the store keeps its state and resyncs. */
  switchTo(url: string): void {
    this.connect(url);
  }

  /** Disconnects for good (until `switchTo`): no reconnection, nothing more reaches the server. */
  goOffline(): void {
    this.unbind?.();
    this.unbind = null;
  }

  close(): void {
    this.goOffline();
    this.unsubscribe();
    this.unload();
  }

  get connected(): boolean {
    return this.store.getState().connected;
  }

  /** Where the tab is, for a stall report: its instance, connection, sync, commands in flight and queued sends. */
  describe(): string {
    const s = this.store.getState();
    const queued = Object.values(s.pending).reduce((n, list) => n + (list?.length ?? 0), 0);
    return (
      `${this.name} ${s.connected ? "connected" : "offline"} to ${this.url}` +
      `${s.syncing ? ", syncing" : ""}${s.epoch === null ? ", never synced" : ""}, ${this.inflight} in flight, ${queued} queued`
    );
  }

  /** Connected, synced and with no command in flight. */
  get settled(): boolean {
    const s = this.store.getState();
    return s.connected && !s.syncing && s.epoch !== null && this.inflight === 0;
  }

  /**
   * Runs a user action on the store and returns what it returned with the transport calls it made at once (the
   * read an open triggers, the first attempt of a send, …), so the operation can wait for their answers, and the
   * moment this page is unloaded: a promise of a page that is gone never settles (a send goes on from the next page's
   * restored queue).
   */
  /**
   * Scrolls the list down, a page at a time, until it shows the conversation (as a person does before acting on a
   * row) or has nothing older; gives up after a few seconds (an offline tab, a sync that does not land), and the
   * operation then acts on the conversation as a link to it would.
   */
  async showConversation(conversationId: number): Promise<boolean> {
    return this.scrollUntil((s) => s.conversations[conversationId] !== undefined);
  }

  /** Scrolls the list to its end; false if it still had older conversations after a few seconds. */
  async showAll(): Promise<boolean> {
    await this.scrollUntil(() => false);
    return !this.store.getState().moreConversations;
  }

  private async scrollUntil(done: (state: ChatState) => boolean): Promise<boolean> {
    for (let waited = 0; waited < 3000;) {
      const s = this.store.getState();
      if (done(s)) return true;
      if (!s.moreConversations) return false;
      if (s.syncing || s.loadingConversations || !s.connected) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        waited += 20;
      } else {
        await s.loadOlderConversations();
        waited += 1;
      }
    }
    return false;
  }

  act<T>(action: (state: ChatState) => T): { value: T; calls: Promise<unknown>[]; unloaded: Promise<void> } {
    const calls: Promise<unknown>[] = [];
    this.capture = calls;
    try {
      return { value: action(this.store.getState()), calls, unloaded: this.unloaded };
    } finally {
      this.capture = null;
    }
  }

  private connect(url: string): void {
    this.goOffline();
    this.url = url;
    const origin = new URL(url).origin;
    const socket: ChatSocket = io(url, {
      auth: { token: this.user.token },
      extraHeaders: { origin },
      transports: ["websocket"],
      forceNew: true,
      // socket.io's own backoff, without its random jitter.
      reconnectionDelay: 200,
      reconnectionDelayMax: 1000,
      randomizationFactor: 0,
    });
    const { failover } = this.options;
    const unbind = bindSocket(this.store, this.link, socket, { reconnectDelayMs: 200 });
    this.unbind = unbind;
    if (failover) {
      socket.on("disconnect", (reason) => {
        if (reason !== "io client disconnect" && this.unbind === unbind) this.connect(failover());
      });
    }
  }

  private http() {
    const send = (path: string, init: RequestInit) => {
      const base = this.options.route(this.url);
      const headers = new Headers(init.headers);
      headers.set("authorization", `Bearer ${this.user.token}`);
      headers.set("origin", new URL(base).origin);
      return fetch(`${base}${path}`, { ...init, headers });
    };
    return createApi(send);
  }

  /** What a page load creates: the store and the link its transport sends through. */
  private newPage(): [ChatStore, SocketLink] {
    this.unsubscribe();
    this.unloaded = new Promise((resolve) => (this.unload = resolve));
    const client = this.http();
    const link = createSocketLink(client);
    const store = createChatStore({
      transport: this.observe(link.transport),
      session: sessionTransport(client),
      newId: () => (this.lastId = `${this.name}.${++this.ids}`),
      queueStorage: this.sessionStorage,
      // Reads go out as the page's would with nothing to coalesce: at once, so each operation awaits its own.
      readDebounceMs: 0,
      ...(this.options.listPage === undefined ? {} : { listPage: this.options.listPage }),
    });
    this.unsubscribe = store.subscribe((state, prev) => {
      this.judge(state, prev);
      this.view(store, state, prev);
    });
    return [store, link];
  }

  /** The same transport, with every call counted, recorded in the journal and offered to `act`. */
  private observe(inner: ChatTransport): ChatTransport {
    const userId = this.user.id;
    const journal = this.journal;
    const track = <T>(call: Promise<T>): Promise<T> => {
      this.inflight++;
      const done = () => void this.inflight--;
      call.then(done, done);
      this.capture?.push(call);
      return call;
    };
    return {
      send: (input) => {
        journal.sendIssued(userId, input.conversationId);
        return track(
          inner.send(input).then((res) => {
            if (res.ok) journal.sendAcknowledged(userId, res.message);
            return res;
          }),
        );
      },
      deleteMessage: (input) => track(inner.deleteMessage(input)),
      read: (input) => {
        journal.readIssued(userId, input.conversationId, input.seq);
        return track(
          inner.read(input).then((res) => {
            if (res.ok) journal.readAcknowledged(userId, input.conversationId, input.seq);
            return res;
          }),
        );
      },
      mute: (input) => {
        const issued = journal.muteIssued(userId, input.conversationId);
        const answered = (unread: UnreadUpdate | null) =>
          journal.muteAnswered(userId, input.conversationId, input.muted, issued, unread);
        return track(
          inner.mute(input).then(
            (res) => {
              answered(res.ok ? res.unread : null);
              return res;
            },
            (err: unknown) => {
              answered(null);
              throw err;
            },
          ),
        );
      },
      markUnread: (input) => {
        journal.markIssued(userId, input.conversationId);
        return track(
          inner.markUnread(input).then((res) => {
            if (res.ok) journal.markAcknowledged(userId, input.conversationId, res.unread);
            return res;
          }),
        );
      },
      sync: (limit) => track(inner.sync(limit)),
      listConversations: (input) =>
        track(
          inner.listConversations(input).then((res) => {
            if (res.ok) this.pages++;
            return res;
          }),
        ),
      fetchMessages: (conversationId, query) => track(inner.fetchMessages(conversationId, query)),
      createConversation: (input) => track(inner.createConversation(input)),
      addMembers: (conversationId, input) => track(inner.addMembers(conversationId, input)),
      removeMember: (conversationId, memberId) => track(inner.removeMember(conversationId, memberId)),
      leaveConversation: (conversationId) => {
        journal.leaveIssued(userId, conversationId);
        return track(
          inner.leaveConversation(conversationId).then((res) => {
            if (res.ok) journal.leaveAcknowledged(userId, conversationId);
            return res;
          }),
        );
      },
      deleteConversation: (conversationId) => {
        journal.deleteIssued(conversationId);
        return track(
          inner.deleteConversation(conversationId).then((res) => {
            if (res.ok) journal.deleteAcknowledged(userId, conversationId);
            return res;
          }),
        );
      },
    };
  }

  /**
   * The page's message list, as the simulated person keeps it: at the bottom of the open conversation, so every
   * message the store has loaded is on screen (the store reads it while the tab is visible and focused).
   */
  private view(store: ChatStore, state: ChatState, prev: ChatState): void {
    const id = state.activeConversationId;
    if (id === null || id === prev.activeConversationId) return;
    store.getState().setOnScreen(id, { highestSeq: 0, following: true });
  }

  /** Every state the store takes: what a badge could show at that moment. */
  private judge(state: ChatState, prev: ChatState): void {
    const broken = checkUnreadInvariants(state, storeUnreadRows(state));
    if (broken.length > 0) {
      // The first broken state of a run of them says how the tab got there.
      const first = checkUnreadInvariants(prev, storeUnreadRows(prev)).length === 0;
      this.journal.violation(
        `${this.name}: ${broken.join("; ")}${first ? ` (${describeTransition(prev, state)})` : ""}`,
      );
    }
    if (state.unreadCounts !== prev.unreadCounts) {
      for (const [id, before] of Object.entries(prev.unreadCounts)) {
        const now = state.unreadCounts[Number(id)];
        if (now === undefined && state.moreConversations && !state.conversations[Number(id)]) {
          // On no page the tab lists: a snapshot carries its count only while it counts something, so gone is 0.
          if (0 < before && !this.journal.mayDrop(this.user.id, Number(id), 0))
            this.journal.violation(`${this.name}: count of #${id} dropped ${before} -> 0 (unlisted) without a read`);
        } else if (now === undefined) {
          if (!this.journal.mayRemove(this.user.id, Number(id)))
            this.journal.violation(`${this.name}: count of #${id} removed although nobody left or deleted it`);
        } else if (now < before && !this.journal.mayDrop(this.user.id, Number(id), now)) {
          this.journal.violation(`${this.name}: count of #${id} dropped ${before} -> ${now} without a read`);
        }
      }
    }
    if (state.conversations !== prev.conversations) {
      for (const id of Object.keys(prev.conversations)) {
        if (state.conversations[Number(id)] === undefined && !this.journal.mayRemove(this.user.id, Number(id)))
          this.journal.violation(`${this.name}: #${id} disappeared although nobody left or deleted it`);
      }
    }
  }
}

type UnreadView = Pick<
  ChatState,
  "epoch" | "version" | "totalUnread" | "totalMentions" | "unreadCounts" | "unreadDetails" | "syncing"
>;

/**
 * What one store transition did to the unread state, for a report: the version (and epoch, when it changed), the
 * totals, and every row as it is after (`#id count`, with `/mentions` and `muted` when they apply), the rows that
 * changed marked with `*` and those that went listed apart. Enough to tell a snapshot that did not add up from a push
 * applied to rows that no longer matched it.
 */
export function describeTransition(prev: UnreadView, next: UnreadView): string {
  const row = (s: UnreadView, id: number) => {
    const detail = s.unreadDetails[id];
    const mentions = detail?.mentionCount ? `/${detail.mentionCount}` : "";
    return `${s.unreadCounts[id] ?? 0}${mentions}${detail?.muted ? " muted" : ""}`;
  };
  const after = unreadRowIds(next);
  const rows = after.map((id) => {
    const before = prev.unreadCounts[id] !== undefined || prev.unreadDetails[id] !== undefined;
    return `#${id} ${row(next, id)}${!before || row(prev, id) !== row(next, id) ? "*" : ""}`;
  });
  const gone = unreadRowIds(prev).filter((id) => !after.includes(id));
  const epoch = prev.epoch === next.epoch ? "" : `epoch ${prev.epoch ?? "none"} → ${next.epoch ?? "none"}, `;
  return (
    `${epoch}v${prev.version} → v${next.version}${next.syncing ? " (syncing)" : ""}, ` +
    `totals ${prev.totalUnread}/${prev.totalMentions} → ${next.totalUnread}/${next.totalMentions}; ` +
    `rows ${rows.join(", ") || "none"}${gone.length > 0 ? `; gone ${gone.map((id) => `#${id}`).join(", ")}` : ""}`
  );
}
