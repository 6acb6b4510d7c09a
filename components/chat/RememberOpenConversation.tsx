"use client";

import { useEffect, useRef, useState } from "react";
import { useChatStore } from "@/components/providers/ChatProvider";
import { selectActiveConversationId } from "@/components/store/selectors";

/**
 * Per tab (sessionStorage, so two tabs keep two different open conversations) and per user: which conversation
 * was open, so a reload opens it again. Storage may be unavailable (private modes, quotas): then nothing is kept.
 */
const key = (userId: number) => `tally:open:${userId}`;

function recall(userId: number): number | null {
  try {
    const id = Number(sessionStorage.getItem(key(userId)));
    return Number.isSafeInteger(id) && id > 0 ? id : null;
  } catch {
    return null;
  }
}

function remember(userId: number, conversationId: number | null): void {
  try {
    if (conversationId === null) sessionStorage.removeItem(key(userId));
    else sessionStorage.setItem(key(userId), String(conversationId));
  } catch {
    // Not kept: a reload opens no conversation.
  }
}

/**
 * Reopens, after the first snapshot, the conversation this tab had open before a reload, if it still exists and
 * nothing was opened meanwhile; from then on remembers whatever is open. Renders nothing.
 */
export function RememberOpenConversation() {
  const userId = useChatStore((s) => s.user?.id ?? null);
  const [remembered] = useState(() => (userId === null ? null : recall(userId)));
  const exists = useChatStore((s) => remembered !== null && s.conversations[remembered] !== undefined);
  const synced = useChatStore((s) => s.epoch !== null);
  const active = useChatStore(selectActiveConversationId);
  const open = useChatStore((s) => s.openConversation);
  const restored = useRef(false);

  useEffect(() => {
    // Until the first snapshot decides, the remembered id stays; one that is gone by then is forgotten.
    if (userId === null || !synced) return;
    if (!restored.current) {
      restored.current = true;
      if (active === null && remembered !== null && exists) return open(remembered, "restored");
    }
    remember(userId, active);
  }, [userId, synced, active, remembered, exists, open]);

  return null;
}
