import { memoryStorage } from "./drafts";
import type { QueueStorage } from "./types";

/**
 * The send queue as this tab last left it, so a reload (or a crashed tab brought back) does not lose what the
 * person wrote and saw as pending. It lives in sessionStorage under `tally:queue:<userId>`: per tab, so two tabs
 * never both work through one queue, and gone with the tab. A duplicated tab starts with a copy, so both may send
 * the same messages; that is harmless because every attempt carries the message's own clientMsgId and the server
 * stores a (sender, clientMsgId) once and answers a repeat with the original.
 */

const PREFIX = "tally:queue:";

export interface SavedItem {
  conversationId: number;
  clientMsgId: string;
  content: string;
  createdAt: string;
  /** The server's final refusal, or null for a message still waiting to go out. */
  refused: string | null;
}

export interface SavedQueue {
  /** Per conversation in the order they are shown (the order they were written). */
  items: SavedItem[];
  /** The clientMsgIds of the waiting (not refused) items, in the order the queue sends them. */
  order: string[];
}

export const EMPTY_SAVED_QUEUE: SavedQueue = { items: [], order: [] };

export function queueKey(userId: number): string {
  return `${PREFIX}${userId}`;
}

function isSavedItem(value: unknown): value is SavedItem {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.conversationId === "number" &&
    typeof v.clientMsgId === "string" &&
    typeof v.content === "string" &&
    typeof v.createdAt === "string" &&
    (v.refused === null || typeof v.refused === "string")
  );
}

/** What was saved for `userId`; nothing when storage is empty, refused or holds something else. */
export function readQueue(storage: QueueStorage, userId: number): SavedQueue {
  try {
    const raw = storage.getItem(queueKey(userId));
    if (raw === null) return EMPTY_SAVED_QUEUE;
    const parsed = JSON.parse(raw) as { items?: unknown; order?: unknown };
    if (!Array.isArray(parsed.items) || !Array.isArray(parsed.order)) return EMPTY_SAVED_QUEUE;
    return {
      items: parsed.items.filter(isSavedItem),
      order: parsed.order.filter((id): id is string => typeof id === "string"),
    };
  } catch {
    return EMPTY_SAVED_QUEUE;
  }
}

/** An empty queue removes the entry. Full or forbidden storage leaves the queue in memory only, as before. */
export function writeQueue(storage: QueueStorage, userId: number, queue: SavedQueue): void {
  const key = queueKey(userId);
  try {
    if (queue.items.length === 0) storage.removeItem(key);
    else storage.setItem(key, JSON.stringify(queue));
  } catch {
    // As above.
  }
}

/** sessionStorage when the page has one (reading it can throw where storage is blocked), else memory. */
export function defaultQueueStorage(): QueueStorage {
  try {
    if (typeof window !== "undefined" && window.sessionStorage) return window.sessionStorage;
  } catch {
    // Blocked storage.
  }
  return memoryStorage();
}
