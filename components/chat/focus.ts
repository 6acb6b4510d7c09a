/**
 * Where the keyboard's focus goes when the element that held it goes away (a conversation closed, left or deleted,
 * a person unblocked): the browser would leave it on the page itself, and the next Tab would start from the top.
 */

/** Whether the focus is lost: on the page itself, or nowhere. */
export function focusLost(): boolean {
  const active = document.activeElement;
  return active === null || active === document.body;
}

/** Focuses the row of `conversationId` in the list, else the first row, else the New button. */
export function focusConversationList(conversationId: number | null = null): void {
  const row =
    (conversationId === null
      ? null
      : document.querySelector<HTMLElement>(
          `[data-testid="conversation-item"][data-conversation-id="${conversationId}"]`,
        )) ??
    document.querySelector<HTMLElement>('[data-testid="conversation-item"]') ??
    document.querySelector<HTMLElement>('[data-testid="new-conversation"]');
  row?.focus();
}
