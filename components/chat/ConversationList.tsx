"use client";

import { memo, useEffect, useMemo, useRef } from "react";
import { useChatStore } from "@/components/providers/ChatProvider";
import { formatTimestamp } from "@/components/lib/format";
import {
  selectActiveConversationId,
  selectConversation,
  selectConversationOrder,
  selectMarkUnreadRefusal,
  selectMuted,
  selectShownMentions,
  selectShownUnread,
  selectUnlistedMentions,
  selectUnlistedUnread,
} from "@/components/store/selectors";
import { announce } from "./Announcer";
import { deletedWords } from "./deleted-words";
import { RowMenu } from "./RowMenu";
import { rowShortcut } from "./row-shortcut";

const OFFLINE_NOTE = "Not while offline";

function MutedIcon() {
  return (
    <svg
      className="muted-icon"
      data-testid="muted-icon"
      viewBox="0 0 16 16"
      width="15"
      height="15"
      role="img"
      aria-label="Muted"
    >
      <path
        d="M8 1.5a4 4 0 0 0-4 4v2.4L2.6 10.6a.6.6 0 0 0 .5.9h9.8a.6.6 0 0 0 .5-.9L12 7.9V5.5a4 4 0 0 0-4-4ZM6.3 12.5a1.8 1.8 0 0 0 3.4 0Z"
        fill="currentColor"
      />
      <path d="M2 2l12 12" stroke="var(--bg)" strokeWidth="3" strokeLinecap="round" />
      <path d="M2 2l12 12" stroke="currentColor" strokeWidth="1.4" strokeLinecap="round" />
    </svg>
  );
}

/**
 * Mute and mark as unread, from a row's menu or keys: asked of the store, then said to a screen reader when done,
 * or when refused (offline), at once and where the person acted, not only later in the conversation's pane.
 */
function useRowCommands() {
  const mute = useChatStore((s) => s.mute);
  const markUnread = useChatStore((s) => s.markUnread);
  return useMemo(
    () => ({
      async toggleMute(id: number, title: string, muted: boolean) {
        const error = await mute(id, !muted);
        if (error !== null) announce(`“${title}” not ${muted ? "unmuted" : "muted"}. ${error}`);
        else announce(muted ? `“${title}” unmuted.` : `“${title}” muted: only its mentions count in the badge.`);
      },
      async markUnread(id: number, title: string) {
        const error = await markUnread(id);
        announce(error === null ? `“${title}” marked as unread.` : `“${title}” not marked as unread. ${error}`);
      },
    }),
    [mute, markUnread],
  );
}

const ConversationItem = memo(function ConversationItem({ id }: { id: number }) {
  const conversation = useChatStore(selectConversation(id));
  const unread = useChatStore(selectShownUnread(id));
  const mentions = useChatStore(selectShownMentions(id));
  const muted = useChatStore(selectMuted(id));
  const active = useChatStore((s) => s.activeConversationId === id);
  const open = useChatStore((s) => s.openConversation);
  const commands = useRowCommands();
  const markUnreadRefusal = useChatStore(selectMarkUnreadRefusal(id));
  // The menu says so before anything is chosen; a shortcut pressed offline is refused by the store and announced.
  const offline = useChatStore((s) => !s.connected);
  const myId = useChatStore((s) => s.user?.id);
  if (!conversation) return null;
  const last = conversation.lastMessage;
  // What the row adds to the app badge: a muted conversation only its mentions.
  const counted = muted ? mentions : unread;

  return (
    <li
      className="conversation-row"
      onKeyDown={(event) => {
        const command = rowShortcut(event);
        if (command === null) return;
        event.preventDefault();
        if (command === "mute") void commands.toggleMute(id, conversation.title, muted);
        else if (markUnreadRefusal === null) void commands.markUnread(id, conversation.title);
      }}
    >
      <button
        type="button"
        className={`conversation-item${active ? " active" : ""}${counted > 0 ? " unread" : ""}${muted ? " muted" : ""}`}
        data-testid="conversation-item"
        data-conversation-id={id}
        data-unread={unread}
        data-muted={muted}
        data-mentions={mentions}
        aria-current={active ? "true" : undefined}
        aria-keyshortcuts="Alt+Shift+M Alt+Shift+U"
        onClick={() => open(id)}
      >
        <span className="conversation-top">
          {/*
            Isolated by its dir (a title or message with bidi controls cannot turn the rest of the row around), and
            "auto": a right-to-left title is cut at its end (the left), not at its start. The text is not in a <bdi>,
            which dir="auto" would skip when it looks for the direction.
          */}
          <span className="conversation-title" dir="auto">
            {conversation.title}
            {conversation.kind === "direct" && conversation.members.some((m) => m.bot) && (
              <span className="bot-tag" data-testid="bot-tag">
                bot
              </span>
            )}
          </span>
          {last && (
            <time className="conversation-time" dateTime={last.createdAt}>
              {formatTimestamp(last.createdAt)}
            </time>
          )}
        </span>
        <span className="conversation-bottom">
          <span className="conversation-preview" dir="auto">
            {last ? (
              <>
                {/* In a direct conversation the title already names the other person: only "You" is said. */}
                {last.deleted ? (
                  <span className="preview-deleted" data-testid="preview-deleted">
                    {deletedWords(last.senderId === myId, last.senderName)}
                  </span>
                ) : last.senderId === myId || conversation.kind === "group" ? (
                  <>
                    <span className="preview-sender">{last.senderId === myId ? "You" : last.senderName}:</span>{" "}
                    <bdi>{last.content}</bdi>
                  </>
                ) : (
                  // Alone, the text sets the row's direction (dir="auto" above), so it is not in a <bdi>.
                  last.content
                )}
              </>
            ) : (
              <span className="preview-empty">No messages yet</span>
            )}
          </span>
          {muted && <MutedIcon />}
          {mentions > 0 && (
            <span
              className="badge mention-badge"
              data-testid="mention-badge"
              aria-label={`${mentions} ${mentions === 1 ? "mention" : "mentions"}`}
            >
              {mentions === 1 ? "@" : `@${mentions}`}
            </span>
          )}
          {unread > 0 && (
            <span
              className={muted ? "badge badge-muted" : "badge"}
              data-testid="conversation-badge"
              aria-label={muted ? `${unread} unread, muted` : `${unread} unread`}
            >
              {unread}
            </span>
          )}
        </span>
      </button>
      <RowMenu
        title={conversation.title}
        muted={muted}
        muteRefusal={offline ? OFFLINE_NOTE : null}
        markUnreadRefusal={offline ? OFFLINE_NOTE : markUnreadRefusal}
        onMute={() => void commands.toggleMute(id, conversation.title, muted)}
        onMarkUnread={() => void commands.markUnread(id, conversation.title)}
      />
    </li>
  );
});

/**
 * With nothing focused (after a click on the page's background) or its messages focused (a click among them, or
 * Tab to scroll them), the shortcuts act on the open conversation; in a text field they never do, so the composer
 * keeps every key.
 */
function useShortcutsOnOpenConversation(): void {
  const active = useChatStore(selectActiveConversationId);
  const muted = useChatStore((s) => (active === null ? false : (s.unreadDetails[active]?.muted ?? false)));
  const title = useChatStore((s) => (active === null ? "" : (s.conversations[active]?.title ?? "")));
  const commands = useRowCommands();
  const markUnreadRefusal = useChatStore((s) => (active === null ? null : selectMarkUnreadRefusal(active)(s)));
  useEffect(() => {
    if (active === null) return;
    const onKeyDown = (event: KeyboardEvent) => {
      const focused = document.activeElement;
      if (focused !== document.body && !focused?.matches('[data-testid="message-list"]')) return;
      const command = rowShortcut(event);
      if (command === null) return;
      event.preventDefault();
      if (command === "mute") void commands.toggleMute(active, title, muted);
      else if (markUnreadRefusal === null) void commands.markUnread(active, title);
    };
    document.addEventListener("keydown", onKeyDown);
    return () => document.removeEventListener("keydown", onKeyDown);
  }, [active, muted, title, commands, markUnreadRefusal]);
}

export function ConversationList() {
  const order = useChatStore(selectConversationOrder);
  const everSynced = useChatStore((s) => s.epoch !== null);
  useShortcutsOnOpenConversation();

  if (order.length === 0) {
    return (
      <p className="sidebar-empty" data-testid="conversation-list-empty">
        {everSynced
          ? "No conversations yet. Press New and type the name of someone with an account here: names are suggested once you share a conversation."
          : "Loading conversations…"}
      </p>
    );
  }
  return (
    <ul className="conversation-list" data-testid="conversation-list">
      {order.map((id) => (
        <ConversationItem key={id} id={id} />
      ))}
      <OlderConversations />
    </ul>
  );
}

/**
 * The list's end: the next page, loaded as the end comes into view or on a click, and what the conversations not
 * listed yet add to the badge, kept in sight at the bottom of the list (so the badge is still the sum of what the list
 * shows, and a person sees where the rest is).
 */
function OlderConversations() {
  const more = useChatStore((s) => s.moreConversations);
  const loading = useChatStore((s) => s.loadingConversations);
  const error = useChatStore((s) => s.conversationsError);
  const unread = useChatStore(selectUnlistedUnread);
  const mentions = useChatStore(selectUnlistedMentions);
  const load = useChatStore((s) => s.loadOlderConversations);
  const end = useRef<HTMLLIElement>(null);
  const pill = useRef<HTMLLIElement>(null);
  /**
   * The pill's click: the next page, then the first of its rows that counts in the badge is scrolled into view (or,
   * when none does yet, the first new row), so the person sees where the count went.
   */
  const showUnlisted = async () => {
    const list = pill.current?.closest("ul");
    const rows = () => [...(list?.querySelectorAll<HTMLElement>("[data-testid=conversation-item]") ?? [])];
    const known = new Set(rows().map((row) => row.dataset.conversationId));
    await load();
    requestAnimationFrame(() => {
      const added = rows().filter((row) => !known.has(row.dataset.conversationId));
      const counted = added.find(
        (row) => Number(row.dataset[row.dataset.muted === "true" ? "mentions" : "unread"]) > 0,
      );
      (counted ?? added[0])?.scrollIntoView({ block: "center" });
    });
  };
  useEffect(() => {
    // After a refusal the next page waits for a click. Observed again after each page, so an end still in view
    // loads the one after.
    const element = end.current;
    if (!more || loading || error || !element) return;
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) void load();
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, [more, loading, error, load]);

  return (
    <>
      {more && (
        <li className="older-conversations" ref={end} data-testid="older-conversations">
          <button
            type="button"
            className="older-button"
            data-testid="older-button"
            disabled={loading}
            onClick={() => void load()}
          >
            {loading ? "Loading older conversations…" : "Show older conversations"}
          </button>
          {error && (
            <p className="form-error older-error" role="alert" data-testid="older-error">
              {error}
            </p>
          )}
        </li>
      )}
      {(unread > 0 || mentions > 0) && (
        <li className="older-unread-row" ref={pill}>
          <button
            type="button"
            className="older-unread"
            data-testid="older-unread"
            data-unread={unread}
            data-mentions={mentions}
            disabled={!more || loading}
            onClick={() => void showUnlisted()}
          >
            <span className="older-unread-text">
              {describeUnlisted(unread, mentions)} in {more ? "older conversations" : "conversations not listed yet"}
            </span>
            {mentions > 0 && (
              <span className="badge mention-badge" aria-hidden="true">
                {mentions === 1 ? "@" : `@${mentions}`}
              </span>
            )}
            {unread > 0 && (
              <span className="badge" aria-hidden="true">
                {unread}
              </span>
            )}
          </button>
        </li>
      )}
    </>
  );
}

function describeUnlisted(unread: number, mentions: number): string {
  const parts = [];
  if (unread > 0) parts.push(`${unread} unread`);
  if (mentions > 0) parts.push(`${mentions} ${mentions === 1 ? "mention" : "mentions"}`);
  return parts.join(", ");
}
