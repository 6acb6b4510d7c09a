import type { ChatStore } from "@/components/store";
import type { ChatSocket } from "@/components/store/socket-binding";
import type { MessageDTO } from "@/server/contracts";
import { nextLife, notificationText, shouldNotify } from "./notify-rule";
import { browserStorage, notificationsOn, readPreference, type PreferenceStorage } from "./preference";
import { createTabPresence } from "./tabs";

/** The browser APIs notifications use; a test passes its own. Missing ones turn notifications off. */
export interface NotificationEnv {
  Notification?: typeof Notification;
  locks?: LockManager;
  channel?: (name: string) => BroadcastChannel;
  /** Brings the window to the front when a notification is clicked. */
  focus?: () => void;
  newTabId?: () => string;
  /** Where the person's own on/off switch is kept (preference.ts); none: on. */
  storage?: PreferenceStorage;
}

function browserEnv(): NotificationEnv {
  if (typeof window === "undefined") return {};
  return {
    ...("Notification" in window ? { Notification: window.Notification } : {}),
    ...(navigator.locks ? { locks: navigator.locks } : {}),
    ...(typeof BroadcastChannel === "function" ? { channel: (name: string) => new BroadcastChannel(name) } : {}),
    focus: () => window.focus(),
    newTabId: () => crypto.randomUUID(),
    storage: browserStorage(),
  };
}

interface Shown {
  conversationId: number;
  /** The message's id: a notification of a message deleted since closes. */
  messageId: number;
  counted: boolean;
  notification: Notification;
}

/**
 * System notifications for new messages, once per user however many tabs are open: the tabs of one user elect
 * one notifier with a Web Lock (the first tab holds it until it closes, then the next takes over), and the
 * notifier shows a notification only while no tab is being looked at, and in a muted conversation only for a
 * mention (notify-rule.ts). A notification closes when its conversation is read in any tab: every tab's store
 * gets the same unread pushes. Nothing is shown before the person allowed notifications, nor while they have turned
 * them off in Tally (preference.ts). Returns the teardown.
 */
export function bindNotifications(
  deps: { store: ChatStore; socket: ChatSocket; userId: number },
  env: NotificationEnv = browserEnv(),
): () => void {
  const { store, socket, userId } = deps;
  const Note = env.Notification;
  if (!Note || !env.locks) return () => undefined;

  const looking = () => store.getState().visible && store.getState().focused;
  const presence = createTabPresence(
    env.channel?.(`tally-tabs:${userId}`) ?? null,
    env.newTabId?.() ?? String(Math.random()),
    looking(),
  );
  const stopPresence = store.subscribe(() => presence.setLooking(looking()));

  let leader = false;
  let resign: () => void = () => undefined;
  const abort = new AbortController();
  env.locks
    .request(`tally-notifier:${userId}`, { signal: abort.signal }, () => {
      leader = true;
      return new Promise<void>((resolve) => (resign = resolve));
    })
    .catch(() => undefined); // aborted at teardown while waiting for another tab's lock

  const shown: Shown[] = [];
  const seen = new Set<number>();

  /**
   * Messages of conversations this tab does not list yet (an older one, on a page it has not loaded: the message makes
   * it sync, and the snapshot lists the conversation first), decided on once it is listed. A few at most: one the
   * sync never lists (the user left it) gives way to newer ones.
   */
  const waiting: MessageDTO[] = [];
  const MAX_WAITING = 20;

  const onMessage = ({ message }: { message: MessageDTO }) => {
    // A message can arrive twice (a replay after an instance died): one notification per message id.
    if (seen.has(message.id) || message.deleted) return;
    seen.add(message.id);
    // The switch is read for each message: it may have been flipped in any tab since.
    const on = notificationsOn(Note.permission, readPreference(env.storage, userId));
    if (!leader || !on || message.senderId === userId) return;
    if (!store.getState().conversations[message.conversationId]) {
      waiting.push(message);
      if (waiting.length > MAX_WAITING) waiting.shift();
      return;
    }
    decide(message);
  };
  const stopWaiting = store.subscribe((state) => {
    for (let i = 0; i < waiting.length; i++) {
      const message = waiting[i]!;
      if (!state.conversations[message.conversationId]) continue;
      waiting.splice(i--, 1);
      decide(message);
    }
  });

  const decide = (message: MessageDTO) => {
    const state = store.getState();
    const conversation = state.conversations[message.conversationId];
    // The mute as the latest unread state says (the row shows the same), not the snapshot's conversation.
    const muted = state.unreadDetails[message.conversationId]?.muted ?? conversation?.muted ?? false;
    const blockedIds = state.blocked.map((b) => b.id);
    const anyTabLooking = presence.anyLooking();
    if (!shouldNotify(message, { me: userId, conversation, muted, anyTabLooking, blockedIds })) return;
    const { title, body } = notificationText(message, conversation!);
    const notification = new Note(title, { body, tag: `tally:${message.conversationId}:${message.seq}` });
    notification.onclick = () => {
      env.focus?.();
      store.getState().openConversation(message.conversationId);
      notification.close();
    };
    const counted = (store.getState().unreadCounts[message.conversationId] ?? 0) > 0;
    shown.push({ conversationId: message.conversationId, messageId: message.id, counted, notification });
  };
  socket.on("message:new", onMessage);

  /** A message its sender deleted: never notified from now on (a late copy), and its notification closes. */
  const onDeleted = ({ message }: { message: MessageDTO }) => {
    seen.add(message.id);
    for (let i = waiting.length - 1; i >= 0; i--) if (waiting[i]!.id === message.id) waiting.splice(i, 1);
    for (let i = shown.length - 1; i >= 0; i--) {
      if (shown[i]!.messageId !== message.id) continue;
      shown[i]!.notification.close();
      shown.splice(i, 1);
    }
  };
  socket.on("message:deleted", onDeleted);

  const stopClosing = store.subscribe((state) => {
    for (let i = shown.length - 1; i >= 0; i--) {
      const s = shown[i]!;
      const gone = !state.conversations[s.conversationId];
      const life = nextLife(s.counted, gone ? undefined : (state.unreadCounts[s.conversationId] ?? 0));
      if (life === "counted") s.counted = true;
      if (life === "close") {
        s.notification.close();
        shown.splice(i, 1);
      }
    }
  });

  return () => {
    socket.off("message:new", onMessage);
    socket.off("message:deleted", onDeleted);
    stopWaiting();
    stopClosing();
    stopPresence();
    presence.close();
    abort.abort();
    resign();
    for (const s of shown) s.notification.close();
    shown.length = 0;
  };
}
