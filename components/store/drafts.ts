import type { DraftStorage } from "./types";

/**
 * Drafts live in the browser's storage under `tally:draft:<userId>:<conversationId>`: one per conversation and per
 * user, so two people who use the same browser never see each other's drafts. Storage can be full or forbidden
 * (private modes), and a draft is a convenience, so failures are ignored.
 */

const PREFIX = "tally:draft:";

export function draftKey(userId: number, conversationId: number): string {
  return `${PREFIX}${userId}:${conversationId}`;
}

export function readDraft(storage: DraftStorage, userId: number, conversationId: number): string {
  try {
    return storage.getItem(draftKey(userId, conversationId)) ?? "";
  } catch {
    return "";
  }
}

/** An empty text removes the draft. */
export function writeDraft(storage: DraftStorage, userId: number, conversationId: number, text: string): void {
  const key = draftKey(userId, conversationId);
  try {
    if (text === "") storage.removeItem(key);
    else storage.setItem(key, text);
  } catch {
    // Full or forbidden storage: the draft lives only in the composer.
  }
}

/** Removes every draft of one user (and nobody else's). */
export function clearDrafts(storage: DraftStorage, userId: number): void {
  const prefix = `${PREFIX}${userId}:`;
  try {
    const keys: string[] = [];
    for (let i = 0; i < storage.length; i++) {
      const key = storage.key(i);
      if (key?.startsWith(prefix)) keys.push(key);
    }
    for (const key of keys) storage.removeItem(key);
  } catch {
    // As above.
  }
}

/** A Storage kept in memory: for tests, for Node (the simulation) and for browsers that refuse localStorage. */
export function memoryStorage(): DraftStorage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    key: (index) => [...items.keys()][index] ?? null,
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, String(value)),
    removeItem: (key) => void items.delete(key),
  };
}

/** localStorage when the page has one (reading it can throw where storage is blocked), else memory. */
export function defaultDraftStorage(): DraftStorage {
  try {
    if (typeof window !== "undefined" && window.localStorage) return window.localStorage;
  } catch {
    // Blocked storage.
  }
  return memoryStorage();
}
