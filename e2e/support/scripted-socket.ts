import type { Page, WebSocketRoute } from "@playwright/test";
import type {
  ConversationDTO,
  MessageDTO,
  Snapshot,
  StartResponse,
  UnreadUpdate,
  UserDTO,
} from "../../server/contracts/index.ts";

/*
 * A page whose server is scripted by the test: /api/start and message history by page.route, the Socket.IO
 * connection by page.routeWebSocket speaking Engine.IO 4 / Socket.IO 5 by hand. For tests of what the client
 * shows for given states (and for screenshots), independent of what the real server can do yet. It answers
 * `sync` with the snapshot it is given and records every other command for the test to acknowledge.
 */

export interface ScriptedServer {
  /** Every command the page emitted, with the acknowledgement id to answer it with. */
  commands: { event: string; input: unknown; ackId: number }[];
  ack(ackId: number, answer: unknown): void;
  push(event: "unread:changed", update: UnreadUpdate): void;
}

/** `42`: an event; `43`: an acknowledgement. The digits between the type and the JSON are the ack id. */
const PACKET = /^4([23])(\d*)(.*)$/s;

export async function scriptServer(
  page: Page,
  user: UserDTO,
  snapshot: Snapshot,
  history: Record<number, MessageDTO[]> = {},
): Promise<ScriptedServer> {
  const start: StartResponse = { user, lab: false };
  await page.route("**/api/start", (route) => route.fulfill({ json: start }));
  await page.route(/\/api\/conversations\/(\d+)\/messages/, (route) => {
    const id = Number(/\/api\/conversations\/(\d+)\/messages/.exec(route.request().url())?.[1]);
    return route.fulfill({ json: { messages: history[id] ?? [] } });
  });

  let socket: WebSocketRoute | null = null;
  const server: ScriptedServer = {
    commands: [],
    ack(ackId, answer) {
      socket?.send(`43${ackId}${JSON.stringify([answer])}`);
    },
    push(event, update) {
      socket?.send(`42${JSON.stringify([event, update])}`);
    },
  };
  await page.routeWebSocket(/\/socket\.io\//, (ws) => {
    socket = ws;
    ws.send(
      `0${JSON.stringify({ sid: "scripted", upgrades: [], pingInterval: 600_000, pingTimeout: 600_000, maxPayload: 1_000_000 })}`,
    );
    ws.onMessage((raw) => {
      const text = typeof raw === "string" ? raw : raw.toString();
      if (text.startsWith("40")) {
        ws.send(`40${JSON.stringify({ sid: "scripted-ns" })}`);
        return;
      }
      const packet = PACKET.exec(text);
      if (!packet || packet[1] !== "2") return;
      const [event, input] = JSON.parse(packet[3] ?? "[]") as [string, unknown?];
      const ackId = Number(packet[2]);
      if (event === "sync") server.ack(ackId, { ok: true, snapshot });
      else server.commands.push({ event, input, ackId });
    });
  });
  return server;
}

/** A conversation as a snapshot carries it, with the unread state given. */
export function scriptedConversation(
  id: number,
  title: string,
  members: UserDTO[],
  last: MessageDTO | null,
  unread: Partial<
    Pick<ConversationDTO, "unreadCount" | "mentionCount" | "muted" | "markedUnread" | "markVersion">
  > = {},
): ConversationDTO {
  const unreadCount = unread.unreadCount ?? 0;
  return {
    id,
    kind: members.length > 2 ? "group" : "direct",
    title,
    members,
    lastSeq: last?.seq ?? 0,
    lastReadSeq: Math.max(0, (last?.seq ?? 0) - unreadCount),
    unreadCount,
    mentionCount: 0,
    muted: false,
    markedUnread: false,
    markVersion: 0,
    ...unread,
    lastMessage: last,
    createdAt: "2026-11-23T08:00:00.000Z",
    canDelete: true,
  };
}
