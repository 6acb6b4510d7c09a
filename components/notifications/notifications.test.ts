import { describe, expect, it } from "vitest";
import type { ChatSocket } from "@/components/store/socket-binding";
import { BOB, conversation, ME, message, setup } from "@/components/store/fake-transport";
import type { MessageDTO } from "@/server/contracts";
import { bindNotifications, type NotificationEnv } from "./notifications";
import { nextLife, notificationText, shouldNotify } from "./notify-rule";
import { readPreference, writePreference } from "./preference";

const CAROL = { id: 3, name: "Carol" };

describe("the notification rule", () => {
  const group = conversation(5, { kind: "group", title: "Team", members: [ME, BOB, CAROL] });
  const muted = { ...group, muted: true };
  const ctx = (c = group, anyTabLooking = false) => ({ me: ME.id, conversation: c, muted: c.muted, anyTabLooking });

  it("notifies of someone else's message while no tab is looked at", () => {
    expect(shouldNotify(message(5, 1), ctx())).toBe(true);
    expect(shouldNotify(message(5, 1, { senderId: ME.id }), ctx())).toBe(false);
    expect(shouldNotify(message(5, 1), ctx(group, true))).toBe(false);
    expect(
      shouldNotify(message(5, 1), { me: ME.id, conversation: undefined, muted: false, anyTabLooking: false }),
    ).toBe(false);
  });

  it("in a muted conversation, only of a message that mentions the user", () => {
    expect(shouldNotify(message(5, 1, { content: "lunch?" }), ctx(muted))).toBe(false);
    expect(shouldNotify(message(5, 1, { content: "lunch, @Me?" }), ctx(muted))).toBe(true);
    expect(shouldNotify(message(5, 1, { content: "@all lunch" }), ctx(muted))).toBe(true);
    expect(shouldNotify(message(5, 1, { content: "@carol lunch" }), ctx(muted))).toBe(false);
    expect(shouldNotify(message(5, 1, { content: "@all lunch", senderId: CAROL.id }), ctx(muted))).toBe(true);
  });

  it("never of someone the user blocked, mentions included", () => {
    const blockedIds = [BOB.id];
    expect(shouldNotify(message(5, 1, { content: "lunch?" }), { ...ctx(), blockedIds })).toBe(false);
    expect(shouldNotify(message(5, 1, { content: "@all lunch" }), { ...ctx(muted), blockedIds })).toBe(false);
    expect(shouldNotify(message(5, 1, { senderId: CAROL.id }), { ...ctx(), blockedIds })).toBe(true);
  });

  it("names the sender in a group and shortens long texts", () => {
    expect(notificationText(message(5, 1, { content: "hi" }), group)).toEqual({ title: "Team", body: "bob: hi" });
    const direct = conversation(6, { title: "bob" });
    const long = notificationText(message(6, 1, { content: "x".repeat(500) }), direct);
    expect(long.body).toHaveLength(140);
    expect(long.body.endsWith("…")).toBe(true);
  });

  it("closes once the conversation counted the message and then shows nothing unread, or is gone", () => {
    expect(nextLife(false, 0)).toBe("open");
    expect(nextLife(false, 2)).toBe("counted");
    expect(nextLife(true, 1)).toBe("counted");
    expect(nextLife(true, 0)).toBe("close");
    expect(nextLife(false, undefined)).toBe("close");
  });
});

/** Browser stand-ins shared by the tabs of one browser: notifications shown, one lock manager, one channel bus. */
function fakeBrowser() {
  const shown: { title: string; body: string; tag: string; closed: boolean }[] = [];
  class FakeNotification {
    static permission: NotificationPermission = "granted";
    onclick: (() => void) | null = null;
    private readonly record: (typeof shown)[number];
    constructor(title: string, options: NotificationOptions) {
      this.record = { title, body: options.body ?? "", tag: options.tag ?? "", closed: false };
      shown.push(this.record);
    }
    close() {
      this.record.closed = true;
    }
  }
  const holders = new Map<string, (() => void)[]>();
  const locks = {
    request(name: string, options: { signal?: AbortSignal }, task: () => Promise<void>) {
      return new Promise<void>((resolve, reject) => {
        const queue = holders.get(name) ?? [];
        holders.set(name, queue);
        const run = () => void task().then(() => (queue.shift(), queue[0]?.(), resolve()));
        options.signal?.addEventListener("abort", () => {
          const i = queue.indexOf(run);
          if (i > 0) queue.splice(i, 1);
          if (i > 0) reject(new DOMException("aborted", "AbortError"));
        });
        queue.push(run);
        if (queue.length === 1) run();
      });
    },
  };
  const bus = new Set<EventTarget>();
  const channel = () => {
    const target = new EventTarget();
    bus.add(target);
    return Object.assign(target, {
      postMessage(data: unknown) {
        for (const other of bus) if (other !== target) other.dispatchEvent(new MessageEvent("message", { data }));
      },
      close() {
        bus.delete(target);
      },
    }) as unknown as BroadcastChannel;
  };
  let tabs = 0;
  // The browser's localStorage, shared by its tabs.
  const stored = new Map<string, string>();
  const storage = {
    getItem: (key: string) => stored.get(key) ?? null,
    setItem: (key: string, value: string) => void stored.set(key, value),
    removeItem: (key: string) => void stored.delete(key),
  };
  const env = (): NotificationEnv => ({
    Notification: FakeNotification as unknown as typeof Notification,
    locks: locks as unknown as LockManager,
    channel,
    newTabId: () => `tab-${++tabs}`,
    storage,
  });
  return { shown, env, FakeNotification, storage };
}

/** One tab: a store with conversation 5 and a socket whose message:new the test fires. */
function tab(browser: ReturnType<typeof fakeBrowser>, looking = false) {
  const { store } = setup();
  store.setState({
    conversations: { 5: conversation(5, { title: "bob" }) },
    conversationOrder: [5],
    visible: looking,
    focused: looking,
  });
  type Handler = (payload: { message: MessageDTO }) => void;
  const on = new Map<string, Set<Handler>>();
  const of = (event: string) => on.get(event) ?? on.set(event, new Set()).get(event)!;
  const handlers = of("message:new");
  const socket = {
    on: (event: string, handler: Handler) => of(event).add(handler),
    off: (event: string, handler: Handler) => of(event).delete(handler),
  } as unknown as ChatSocket;
  const stop = bindNotifications({ store, socket, userId: ME.id }, browser.env());
  const receive = (m: MessageDTO) => {
    const c = store.getState().conversations[5]!;
    store.setState({ conversations: { 5: { ...c, lastSeq: m.seq, lastMessage: m } } });
    for (const h of handlers) h({ message: m });
  };
  const setUnread = (unreadCount: number) => store.setState({ unreadCounts: { 5: unreadCount } });
  const deleted = (m: MessageDTO) => {
    for (const h of of("message:deleted")) h({ message: { ...m, content: "", deleted: true } });
  };
  return { store, stop, receive, setUnread, handlers, deleted };
}

describe("notifications across tabs", () => {
  it("closes the notification of a message its sender deleted, and never shows one for a deleted message", async () => {
    const browser = fakeBrowser();
    const a = tab(browser);
    await Promise.resolve();
    for (const seq of [1, 2]) {
      a.receive(message(5, seq));
      a.setUnread(seq);
    }
    a.deleted(message(5, 2));
    a.setUnread(1);
    expect(browser.shown.map((n) => [n.tag, n.closed])).toEqual([
      ["tally:5:1", false],
      ["tally:5:2", true],
    ]);
    // A copy that comes late (a relay's replay), or one that comes deleted, shows nothing.
    a.receive(message(5, 2));
    a.receive({ ...message(5, 3), content: "", deleted: true });
    expect(browser.shown).toHaveLength(2);
    a.stop();
  });

  it("shows one notification per message however many tabs are open, and closes it when read anywhere", async () => {
    const browser = fakeBrowser();
    const [a, b] = [tab(browser), tab(browser)];
    await Promise.resolve();
    for (const seq of [1, 2]) {
      a.receive(message(5, seq));
      b.receive(message(5, seq));
      a.setUnread(seq);
      b.setUnread(seq);
    }
    // A replayed push of the same message is not a second notification.
    a.receive(message(5, 2));
    b.receive(message(5, 2));
    expect(browser.shown.map((n) => [n.tag, n.body, n.closed])).toEqual([
      ["tally:5:1", "message 1", false],
      ["tally:5:2", "message 2", false],
    ]);
    b.setUnread(0);
    expect(browser.shown.every((n) => !n.closed)).toBe(true); // b is not the tab that showed them
    a.setUnread(0);
    expect(browser.shown.every((n) => n.closed)).toBe(true);
    a.stop();
    b.stop();
  });

  it("shows nothing while any tab is looked at, and hands the notifier over when its tab goes", async () => {
    const browser = fakeBrowser();
    const [a, b] = [tab(browser), tab(browser, true)];
    await Promise.resolve();
    a.receive(message(5, 1));
    expect(browser.shown).toHaveLength(0);
    b.store.setState({ visible: false });
    a.stop();
    await Promise.resolve();
    await Promise.resolve();
    b.receive(message(5, 2));
    expect(browser.shown.map((n) => n.tag)).toEqual(["tally:5:2"]);
    b.stop();
  });

  it("notifies of a message in a conversation the tab does not list yet once the sync it causes lists it", async () => {
    const browser = fakeBrowser();
    const a = tab(browser);
    await Promise.resolve();
    const older = conversation(9, { kind: "group", title: "Old friends", members: [ME, BOB] });
    const sent = message(9, 4, { content: "remember us?" });
    for (const h of a.handlers) h({ message: sent });
    expect(browser.shown).toHaveLength(0);
    // A page or a sync lists it, with the message: now it is decided on as any other.
    a.store.setState((s) => ({
      conversations: { ...s.conversations, 9: { ...older, lastSeq: 4, lastMessage: sent } },
    }));
    expect(browser.shown.map((n) => [n.title, n.body, n.tag])).toEqual([
      ["Old friends", "bob: remember us?", "tally:9:4"],
    ]);
    // Once only.
    a.store.setState({ visible: false });
    expect(browser.shown).toHaveLength(1);
    a.stop();
  });

  it("shows nothing while the person has turned notifications off in any tab, and notifies again once on", async () => {
    const browser = fakeBrowser();
    const [a, b] = [tab(browser), tab(browser)];
    await Promise.resolve();
    writePreference(browser.storage, ME.id, "off"); // in tab b, say: a is the notifier
    a.receive(message(5, 1));
    b.receive(message(5, 1));
    expect(browser.shown).toHaveLength(0);
    // Another user of the same browser keeps their own switch: only ME's is off.
    expect(readPreference(browser.storage, BOB.id)).toBe("on");
    writePreference(browser.storage, ME.id, "on");
    a.receive(message(5, 2));
    b.receive(message(5, 2));
    expect(browser.shown.map((n) => n.tag)).toEqual(["tally:5:2"]);
    a.stop();
    b.stop();
  });

  it("shows nothing before the person allowed notifications", async () => {
    const browser = fakeBrowser();
    browser.FakeNotification.permission = "default";
    const a = tab(browser);
    await Promise.resolve();
    a.receive(message(5, 1));
    expect(browser.shown).toHaveLength(0);
    a.stop();
  });
});
