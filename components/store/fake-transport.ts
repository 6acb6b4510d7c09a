import type {
  AddMembersInput,
  ConversationDTO,
  MessageDTO,
  Result,
  Snapshot,
  UnreadEntry,
  UnreadUpdate,
  UserDTO,
} from "@/server/contracts";
import { countsAnything, toUnreadEntry } from "@/server/contracts/dto";
import { vi } from "vitest";
import { USER_NAME } from "@/server/contracts/inputs";
import { createChatStore } from "./index";
import type { ChatStoreDeps, ChatTransport, MessagesQuery, SessionTransport } from "./types";

/** Test support: a transport whose every answer the test gives by hand (or by an `auto` responder). */

export interface Pending<I, T> {
  input: I;
  resolve(value: T): void;
  reject(reason: unknown): void;
}

type Queue<I, T> = Pending<I, T>[];

type Method<K extends keyof ChatTransport> = NonNullable<ChatTransport[K]>;
/** What the transport's call `K` resolves with. */
type Answer<K extends keyof ChatTransport> = Awaited<ReturnType<Method<K>>>;
/** The calls of `K` so far, with the one argument each was given. */
type Calls<K extends keyof ChatTransport> = Queue<Parameters<Method<K>>[0], Answer<K>>;
/** Answers every call of `K` at once. */
type Responder<K extends keyof ChatTransport> = (...args: Parameters<Method<K>>) => Answer<K>;

export interface FakeTransport extends ChatTransport {
  sends: Calls<"send">;
  messageDeletes: Calls<"deleteMessage">;
  reads: Calls<"read">;
  mutes: Calls<"mute">;
  marks: Calls<"markUnread">;
  mute: Method<"mute">;
  markUnread: Method<"markUnread">;
  /** The page size each sync asked for. */
  syncs: Queue<number, Answer<"sync">>;
  lists: Calls<"listConversations">;
  fetches: Queue<{ conversationId: number; query: MessagesQuery }, Answer<"fetchMessages">>;
  creates: Calls<"createConversation">;
  adds: Queue<{ conversationId: number; input: AddMembersInput }, Answer<"addMembers">>;
  removals: Queue<{ conversationId: number; userId: number }, Answer<"removeMember">>;
  leaves: Calls<"leaveConversation">;
  deletes: Calls<"deleteConversation">;
  auto: {
    send?: Responder<"send">;
    read?: Responder<"read">;
    sync?: Responder<"sync">;
    listConversations?: Responder<"listConversations">;
    fetchMessages?: Responder<"fetchMessages">;
  };
}

function call<I, T>(queue: Queue<I, T>, input: I, auto?: (input: I) => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    queue.push({ input, resolve, reject });
    if (auto) resolve(auto(input));
  });
}

export function createFakeTransport(): FakeTransport {
  const fake: FakeTransport = {
    sends: [],
    messageDeletes: [],
    reads: [],
    mutes: [],
    marks: [],
    adds: [],
    syncs: [],
    lists: [],
    fetches: [],
    creates: [],
    removals: [],
    leaves: [],
    deletes: [],
    auto: {},
    send: (input) => call(fake.sends, input, fake.auto.send),
    read: (input) => call(fake.reads, input, fake.auto.read),
    deleteMessage: (input) => call(fake.messageDeletes, input),
    mute: (input) => call(fake.mutes, input),
    markUnread: (input) => call(fake.marks, input),
    sync: (limit) => call(fake.syncs, limit, fake.auto.sync),
    listConversations: (input) => call(fake.lists, input, fake.auto.listConversations),
    fetchMessages: (conversationId, query) => {
      const auto = fake.auto.fetchMessages;
      return call(fake.fetches, { conversationId, query }, auto && ((i) => auto(i.conversationId, i.query)));
    },
    createConversation: (input) => call(fake.creates, input),
    addMembers: (conversationId, input) => call(fake.adds, { conversationId, input }),
    removeMember: (conversationId, userId) => call(fake.removals, { conversationId, userId }),
    leaveConversation: (conversationId) => call(fake.leaves, conversationId),
    deleteConversation: (conversationId) => call(fake.deletes, conversationId),
  };
  return fake;
}

export const ME: UserDTO = { id: 1, name: "me" };
export const BOB: UserDTO = { id: 2, name: "bob" };

export function createFakeSession(user: UserDTO = ME): SessionTransport & { signedIn: boolean; lab: boolean } {
  const session: SessionTransport & { signedIn: boolean; lab: boolean } = {
    signedIn: true,
    lab: true,
    async current() {
      return { ok: true, user: session.signedIn ? user : null, lab: session.lab };
    },
    async signIn({ name, password }) {
      if (!USER_NAME.test(name)) {
        return {
          ok: false,
          error: { code: "invalid", message: "A name is 1–32 characters: a–z, A–Z, 0–9, _ or -.", field: "name" },
        };
      }
      if (password !== "right password") {
        return { ok: false, error: { code: "unauthorized", message: "Wrong name or password." } };
      }
      session.signedIn = true;
      return { ok: true, user: { ...user, name }, token: "t" };
    },
    async signUp(credentials) {
      if (credentials.name === "taken")
        return { ok: false, error: { code: "conflict", message: "taken", field: "name" } };
      return session.signIn(credentials);
    },
    async signOut() {
      session.signedIn = false;
      return { ok: true };
    },
    async signOutEverywhere() {
      return session.signOut();
    },
  };
  return session;
}

export function setup(options: Partial<ChatStoreDeps> = {}) {
  const transport = createFakeTransport();
  const session = createFakeSession();
  let ids = 0;
  const store = createChatStore({
    transport,
    session,
    newId: () => `client-${++ids}`,
    retryDelayMs: 0,
    staleUnreadMs: 60_000,
    readDebounceMs: 0,
    ...options,
  });
  store.setState({ user: ME, sessionStatus: "signedIn", connected: true });
  return { store, transport, session };
}

/**
 * Lets every promise continuation and zero-delay timer run. The store tests run on vitest's fake timers, so
 * this moves the fake clock by a few milliseconds, and only timers due by then run, however slow the machine.
 */
export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await vi.advanceTimersByTimeAsync(1);
}

/** Lets promise continuations run, for loops that must stay fast and use no timers. */
export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

export function message(conversationId: number, seq: number, overrides: Partial<MessageDTO> = {}): MessageDTO {
  return {
    id: conversationId * 10_000 + seq,
    conversationId,
    seq,
    senderId: BOB.id,
    senderName: BOB.name,
    content: `message ${seq}`,
    createdAt: new Date(Date.UTC(2025, 0, 1, 12, 0, seq)).toISOString(),
    clientMsgId: `c-${conversationId}-${seq}`,
    ...overrides,
  };
}

export function conversation(id: number, overrides: Partial<ConversationDTO> = {}): ConversationDTO {
  const lastSeq = overrides.lastSeq ?? 0;
  return {
    id,
    kind: "direct",
    title: `conversation ${id}`,
    members: [ME, BOB],
    lastSeq,
    lastReadSeq: lastSeq,
    unreadCount: 0,
    mentionCount: 0,
    muted: false,
    markedUnread: false,
    markVersion: 0,
    lastMessage: lastSeq > 0 ? message(id, lastSeq) : null,
    // Before every message() of the fakes, so a conversation's messages are newer than its creation.
    createdAt: new Date(Date.UTC(2024, 0, 1, 0, 0, id)).toISOString(),
    canDelete: true,
    ...overrides,
  };
}

export function snapshot(
  conversations: ConversationDTO[],
  version: number,
  epoch = "e1",
): Result<{ snapshot: Snapshot }> {
  const totalUnread = conversations.reduce((sum, c) => sum + (c.muted ? c.mentionCount : c.unreadCount), 0);
  const totalMentions = conversations.reduce((sum, c) => sum + c.mentionCount, 0);
  return {
    ok: true,
    snapshot: {
      conversations,
      more: false,
      conversationIds: conversations.map((c) => c.id),
      unread: unreadEntriesOf(conversations),
      totalUnread,
      totalMentions,
      version,
      epoch,
    },
  };
}

/** A snapshot's `unread` for these conversations: the states of those that count anything. */
export function unreadEntriesOf(conversations: ConversationDTO[]): UnreadEntry[] {
  return conversations.filter(countsAnything).map((c) => toUnreadEntry(c.id, c));
}

export function update(
  conversationId: number,
  unreadCount: number,
  totalUnread: number,
  version: number,
  epoch = "e1",
  overrides: Partial<Omit<UnreadUpdate, "conversationId" | "unreadCount" | "totalUnread" | "version" | "epoch">> = {},
): UnreadUpdate {
  return {
    conversationId,
    unreadCount,
    mentionCount: 0,
    muted: false,
    markedUnread: false,
    markVersion: 0,
    totalUnread,
    totalMentions: 0,
    version,
    epoch,
    ...overrides,
  };
}
