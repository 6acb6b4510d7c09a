"use client";

import { Fragment, memo, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from "react";
import type { ConversationKind, MemberAdded, MemberLeft, MessageDTO, UserDTO } from "@/server/contracts";
import { mentionedUserIds } from "@/server/contracts/mentions";
import { useChatStore } from "@/components/providers/ChatProvider";
import { formatFullDate, formatMessageTime } from "@/components/lib/format";
import {
  selectConnected,
  selectConversation,
  selectMessageList,
  selectOthersUnseenBelow,
  selectPending,
  selectShownUnread,
} from "@/components/store/selectors";
import { isBeingRead, latestSeq } from "@/components/store/runtime";
import type { OnScreen } from "@/components/store";
import { firstUnseenSeq } from "./first-unseen";
import { announce } from "./Announcer";
import { useAskedAction } from "./asked-action";
import { deletedBubbleWords } from "./deleted-words";
import { memberLines, placeLines, type MemberLine } from "./member-lines";
import { continuesRun } from "./message-runs";
import { MessageText } from "./MessageText";
import { PendingItem } from "./PendingItem";
import { REPLY_NOTE_TEXT, replyNote } from "./reply-note";

/** How close to an edge counts as "at" it, in pixels. */
const EDGE = 80;
/** Scrolled to within this of the bottom, the list follows it: what arrives is scrolled into view. */
const AT_BOTTOM = 2;
/** A message whose bubble is taller than the screen counts as seen once this much of its end is on screen. */
const LAST_LINE = 24;
/** A list shown less high than this (a window dragged small, a phone's keyboard up) shows nothing readable. */
const MIN_VIEW = 48;
/** Room left above the "New messages" divider when the conversation opens on it. */
const DIVIDER_MARGIN = 8;

const NO_MEMBERS: UserDTO[] = [];
const NO_LEFT: MemberLeft[] = [];
const NO_ADDED: MemberAdded[] = [];

interface MessageProps {
  message: MessageDTO;
  own: boolean;
  /** The conversation's current members and kind: who can be mentioned (server/contracts/mentions.ts). */
  members: UserDTO[];
  kind: ConversationKind;
  userId: number | undefined;
  /** It continues its sender's run (message-runs.ts): name and time are read out but not shown again. */
  continued: boolean;
}

const Message = memo(function Message({ message, own, members, kind, userId, continued }: MessageProps) {
  const memberNames = members.map((m) => m.name);
  const deleted = message.deleted === true;
  // Exactly the rule the server counts mentions by, so the marker and the mention badge agree.
  const mentionsMe =
    !deleted &&
    userId !== undefined &&
    mentionedUserIds(message.content, members, message.senderId, kind).includes(userId);
  const myName = own ? null : (members.find((m) => m.id === userId)?.name ?? null);
  return (
    <li
      className={`message${own ? " own" : ""}${continued ? " continued" : ""}`}
      data-testid="message"
      data-seq={message.seq}
      data-mentions-me={mentionsMe || undefined}
      // One's own message takes the focus when tapped, which shows its "Delete" on a touch screen (no hover there).
      tabIndex={own && !deleted ? -1 : undefined}
    >
      <div className={continued ? "message-meta visually-hidden" : "message-meta"}>
        <span className="message-sender" title={own ? undefined : message.senderName}>
          {own ? "You" : message.senderName}
        </span>
        <time dateTime={message.createdAt} title={formatFullDate(message.createdAt)}>
          {formatMessageTime(message.createdAt)}
        </time>
        {mentionsMe && <span className="visually-hidden">mentions you</span>}
      </div>
      {deleted ? (
        <div className="message-bubble deleted" data-testid="message-deleted">
          {deletedBubbleWords(own)}
        </div>
      ) : mayBeLong(message.content) ? (
        <LongBubble message={message} title={continued ? formatFullDate(message.createdAt) : undefined}>
          <MessageText content={message.content} memberNames={memberNames} kind={kind} myName={myName} />
        </LongBubble>
      ) : (
        // dir="auto": a message in Arabic or Hebrew reads right to left, its full stop at its end.
        <div className="message-bubble" dir="auto" title={continued ? formatFullDate(message.createdAt) : undefined}>
          <MessageText content={message.content} memberNames={memberNames} kind={kind} myName={myName} />
        </div>
      )}
      {own && !deleted && <DeleteMessage message={message} />}
    </li>
  );
});

/**
 * "Delete" beside one's own message (shown on hover or keyboard focus, on a touch screen once the message is tapped): asked first, then the
 * message turns "You deleted this message." in every tab and device of every member, and stops counting for anyone
 * who had not seen it (docs/consistency.md, "7. Deleting a message"). The keyboard's place goes to the message area.
 */
function DeleteMessage({ message }: { message: MessageDTO }) {
  const deleteMessage = useChatStore((s) => s.deleteMessage);
  const { busy, error, run } = useAskedAction();
  async function ask(button: HTMLButtonElement) {
    const area = button.closest<HTMLElement>(".message-scroller");
    const question = "Delete this message for everyone? Nobody will see it again.";
    if (!(await run(question, () => deleteMessage(message.id), "Message deleted."))) return;
    // The button went with the message's text: the message area keeps the keyboard's place.
    area?.focus({ preventScroll: true });
  }
  return (
    <>
      <button
        type="button"
        className="message-delete"
        data-testid="delete-message"
        // Not `disabled`: a disabled button loses the keyboard's focus (run() ignores a click while busy).
        aria-disabled={busy}
        aria-label={`Delete your message from ${formatMessageTime(message.createdAt)}`}
        onClick={(event) => void ask(event.currentTarget)}
      >
        Delete
      </button>
      {error && (
        <p className="message-delete-error" role="alert" data-testid="delete-message-error">
          {error}
        </p>
      )}
    </>
  );
}

/**
 * Whether a message could be taller than a long bubble's height (the CSS's `.message-bubble.clamped`, 20 lines) on
 * some screen: a cheap test, so that short messages measure nothing.
 */
function mayBeLong(content: string): boolean {
  if (content.length > 600) return true;
  let lines = 1;
  for (let i = content.indexOf("\n"); i !== -1; i = content.indexOf("\n", i + 1)) if (++lines > 12) return true;
  return false;
}

/**
 * A long message is shown to its 20th line, with "Show more" under it, so that one message cannot fill everyone's
 * screen. Shown cut, the bubble counts as seen like any other (half of it on screen). A screen reader reads it
 * whole: the rest is cut off from sight, not from the page.
 */
function LongBubble({ message, title, children }: { message: MessageDTO; title?: string; children: ReactNode }) {
  const bubble = useRef<HTMLDivElement>(null);
  const [expanded, setExpanded] = useState(false);
  /** Cut: taller than the clamp on this screen (a wide one may fit it all). */
  const [cut, setCut] = useState(false);
  useLayoutEffect(() => {
    const el = bubble.current;
    if (!el || expanded) return;
    const check = () => setCut(el.scrollHeight > el.clientHeight + 1);
    check();
    if (typeof ResizeObserver === "undefined") return;
    const ro = new ResizeObserver(check);
    ro.observe(el);
    return () => ro.disconnect();
  }, [expanded]);
  const id = `message-${message.conversationId}-${message.seq}`;
  return (
    <>
      <div
        ref={bubble}
        id={id}
        className={expanded ? "message-bubble" : cut ? "message-bubble clamped cut" : "message-bubble clamped"}
        dir="auto"
        title={title}
        data-testid={cut && !expanded ? "cut-message" : undefined}
      >
        {children}
      </div>
      {(cut || expanded) && (
        <button
          type="button"
          className="show-more"
          aria-expanded={expanded}
          aria-controls={id}
          onClick={() => {
            setExpanded(!expanded);
            // Shown cut again from far below its start: its start comes back into view, not the messages after it.
            if (expanded)
              requestAnimationFrame(() => bubble.current?.closest("li")?.scrollIntoView({ block: "nearest" }));
          }}
        >
          {expanded ? "Show less" : "Show more"}
        </button>
      )}
    </>
  );
}

/** A message as a screen reader says it on arrival: long ones are cut. */
const SAID_CHARACTERS = 200;

/**
 * What a screen reader hears as messages arrive in the open conversation: others' new ones, in one sentence per
 * arrival. Not the first page, not older pages, not the person's own (they just wrote it, and it would be said
 * twice: queued, then stored).
 */
function useArrivals(items: MessageDTO[], ready: boolean, userId: number | undefined): string {
  const [text, setText] = useState("");
  /** The newest seq already accounted for (null: not yet shown). */
  const known = useRef<number | null>(null);
  const frame = useRef(0);
  const newest = items.at(-1)?.seq ?? 0;
  useEffect(() => {
    if (!ready) return;
    const before = known.current;
    known.current = Math.max(before ?? 0, newest);
    if (before === null || newest <= before) return;
    const fresh = items.filter((m) => m.seq > before && m.senderId !== userId && !m.deleted);
    const latest = fresh.at(-1);
    if (!latest) return;
    const content =
      latest.content.length > SAID_CHARACTERS ? `${latest.content.slice(0, SAID_CHARACTERS)}…` : latest.content;
    const sentence =
      fresh.length === 1
        ? `${latest.senderName}: ${content}`
        : `${fresh.length} new messages, the last from ${latest.senderName}: ${content}`;
    // Emptied first and filled on the next frame, so the same sentence twice ("bob: ok", "bob: ok") is said twice.
    setText("");
    cancelAnimationFrame(frame.current);
    frame.current = requestAnimationFrame(() => setText(sentence));
    // Only a newer message is an arrival; `items` changes with older pages too.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [newest, ready]);
  useEffect(() => () => cancelAnimationFrame(frame.current), []);
  return text;
}

/**
 * Says "bob left the group." when a member leaves the open group while it is shown (or "carol removed bob from the
 * group.", "dave joined the group."): not the lines that came with its history (they are read with the messages),
 * and once a person.
 */
function useMemberNews<T extends { userId: number; name: string }>(
  conversationId: number,
  people: readonly T[],
  ready: boolean,
  news: (person: T) => string,
): void {
  const known = useRef<{ conversationId: number; ids: Set<number> } | null>(null);
  useEffect(() => {
    if (!ready) return;
    const before = known.current?.conversationId === conversationId ? known.current.ids : null;
    // Never forgotten while the conversation is open: a history page fetched before someone left (or came) can
    // arrive after the line, drop them, and the next page bring them back, which is not news.
    known.current = { conversationId, ids: new Set([...(before ?? []), ...people.map((l) => l.userId)]) };
    if (!before) return;
    const fresh = people.filter((l) => !before.has(l.userId));
    if (fresh.length > 0) announce(fresh.map(news).join(" "));
  }, [conversationId, people, ready, news]);
}

const leftNews = (l: MemberLeft) =>
  l.removedBy ? `${l.removedBy.name} removed ${l.name} from the group.` : `${l.name} left the group.`;
const joinedNews = (a: MemberAdded) => `${a.name} joined the group.`;

function UnreadDivider() {
  return (
    // An item of the list holding the separator: a list's children are its items (axe "list": an <li> with another
    // role made the screen reader's count and positions wrong).
    <li className="unread-divider" data-testid="unread-divider">
      <span role="separator" aria-label="New messages">
        New messages
      </span>
    </li>
  );
}

/** A message counts as seen when half its bubble, or the end of it, is inside the scroller. */
function isSeen(bubble: DOMRect, view: DOMRect): boolean {
  const shown = Math.min(bubble.bottom, view.bottom) - Math.max(bubble.top, view.top);
  if (shown <= 0) return false;
  if (shown * 2 >= bubble.height) return true;
  return bubble.bottom <= view.bottom + 1 && bubble.bottom - Math.min(LAST_LINE, bubble.height) >= view.top - 1;
}

/** Watches every message bubble in `list` (observing one twice is a no-op). */
function watchBubbles(io: IntersectionObserver, list: HTMLElement): void {
  for (const bubble of list.querySelectorAll("[data-seq] > .message-bubble")) io.observe(bubble);
}

export function MessageList({ conversationId }: { conversationId: number }) {
  const list = useChatStore(selectMessageList(conversationId));
  const pending = useChatStore(selectPending(conversationId));
  const userId = useChatStore((s) => s.user?.id);
  const connected = useChatStore(selectConnected);
  const loadOlder = useChatStore((s) => s.loadOlder);
  const refresh = useChatStore((s) => s.refreshMessages);
  const setOnScreen = useChatStore((s) => s.setOnScreen);
  const unseen = useChatStore(selectShownUnread(conversationId));
  const unseenBelow = useChatStore(selectOthersUnseenBelow(conversationId));
  const attending = useChatStore((s) => isBeingRead(s, conversationId));
  /** Up to where this tab has seen, or the server has read, the conversation. */
  const seenUpTo = useChatStore((s) => Math.max(s.seenSeq[conversationId] ?? 0, s.readRequested[conversationId] ?? 0));
  const countsKnown = useChatStore((s) => s.epoch !== null);
  const latest = useChatStore((s) => latestSeq(s, conversationId));
  const conversation = useChatStore(selectConversation(conversationId));
  const members = conversation?.members ?? NO_MEMBERS;
  const kind = conversation?.kind ?? "direct";

  /**
   * The first message that was unread when the conversation was opened (null: none; undefined: the counts or the
   * first page are not in yet), found by counting back over the loaded messages, the user's own left out
   * (first-unseen.ts). Fixed then, so the divider stays where reading started until the conversation is left, or
   * until messages arrive at the bottom while nobody reads: it moves to the first of them.
   */
  const [divider, setDivider] = useState<number | null | undefined>(() =>
    countsKnown && list.loaded ? firstUnseenSeq(list.items, latest, unseen, userId) : undefined,
  );
  // Opened before the first snapshot (a reload) or before the first page: fixed as soon as both are in.
  if (divider === undefined && countsKnown && list.loaded)
    setDivider(firstUnseenSeq(list.items, latest, unseen, userId));

  const scroller = useRef<HTMLDivElement>(null);
  const nearBottom = useRef(true);
  /** The newest seq the list has shown: a message above it is an arrival. */
  const newestKnown = useRef(0);
  /** The first message of others' that arrived at the bottom while nobody was reading; null once someone is. */
  const awayFrom = useRef<number | null>(null);
  const pinnedTop = useRef(0);
  /** At the very bottom when last measured (within AT_BOTTOM): a shrinking scroller keeps it there. */
  const following = useRef(true);
  /** Scroll geometry from just before older messages were requested, to keep the view still when they land. */
  const anchor = useRef<{ height: number; top: number; firstSeq: number | undefined } | null>(null);
  const pendingCount = useRef(0);
  /** The first scroll (to the divider or the bottom) is done; only from then on does what is shown count. */
  const [positioned, setPositioned] = useState(false);
  const [atBottom, setAtBottom] = useState(true);
  /** A reply sent while others' messages wait unseen below: the list stayed put, so a note says where it went. */
  const [replyBelow, setReplyBelow] = useState<string | null>(null);
  /** The bubbles the IntersectionObserver last saw inside the scroller. */
  const intersecting = useRef(new Set<Element>());
  const observer = useRef<IntersectionObserver | null>(null);

  const { items, hasMore, loading, loaded, error, offline } = list;
  const left = useChatStore((s) => s.left[conversationId] ?? NO_LEFT);
  const added = useChatStore((s) => s.added[conversationId] ?? NO_ADDED);
  const placed = useMemo(() => placeLines(items, memberLines(left, added), !hasMore), [items, left, added, hasMore]);
  const firstSeq = items[0]?.seq;
  const dividerBefore = divider == null ? undefined : items.find((m) => m.seq >= divider)?.seq;
  const dividerLoaded = divider === null || (firstSeq !== undefined && firstSeq <= (divider ?? 0)) || !hasMore;

  /**
   * What is on screen: the highest seq seen inside the part of the scroller that the window shows (a window
   * dragged small can put the list below its bottom edge), and whether the list sits at its bottom. A list shown
   * less than MIN_VIEW high shows nothing readable: nothing in it counts as seen.
   */
  function measure(): (OnScreen & { readable: boolean }) | null {
    const el = scroller.current;
    if (!el) return null;
    const box = el.getBoundingClientRect();
    // The visual viewport where there is one: a phone's on-screen keyboard covers the layout viewport's bottom.
    const screen = window.visualViewport;
    const screenTop = screen?.offsetTop ?? 0;
    const screenBottom = screen ? screen.offsetTop + screen.height : window.innerHeight;
    const view = new DOMRect(box.x, Math.max(box.top, screenTop), box.width, 0);
    view.height = Math.max(0, Math.min(box.bottom, screenBottom) - view.top);
    const readable = view.height >= MIN_VIEW;
    let highestSeq = 0;
    for (const bubble of readable ? intersecting.current : []) {
      const seq = Number((bubble.parentElement as HTMLElement | null)?.dataset.seq ?? 0);
      if (seq > highestSeq && bubble.isConnected && isSeen(bubble.getBoundingClientRect(), view)) highestSeq = seq;
    }
    const following = el.scrollHeight - el.scrollTop - el.clientHeight <= AT_BOTTOM;
    return { highestSeq, following, readable };
  }

  /** Tells the store what is on screen; it decides whether that counts (visible and focused window). */
  function report() {
    if (!positioned) return;
    const seen = measure();
    if (!seen) return;
    following.current = seen.following;
    setAtBottom(seen.following);
    if (attending && seen.readable) awayFrom.current = null;
    // At the bottom the reply is in sight: the note has done its work.
    if (seen.following) setReplyBelow(null);
    // Following the bottom of a list nobody can read counts no arrival as seen.
    setOnScreen(conversationId, { highestSeq: seen.highestSeq, following: seen.following && seen.readable });
  }

  /**
   * The scroller changed size: the composer grew with a long draft (or shrank again), or the window did. Its top
   * stays put, so what was at the bottom would slide under the composer and the "Latest" button: a list that was at
   * the bottom is kept there.
   */
  function resized() {
    const el = scroller.current;
    if (!el || !positioned) return;
    if (following.current) el.scrollTop = el.scrollHeight;
    report();
  }
  // The observers' callbacks and the unmount see the latest closures through these.
  const reportRef = useRef(report);
  const resizedRef = useRef(resized);
  useLayoutEffect(() => {
    reportRef.current = report;
    resizedRef.current = resized;
  });

  // Someone looks again: what is on screen now is measured afresh (report() ends the away state once readable).
  useEffect(() => {
    if (attending) reportRef.current();
  }, [attending]);

  useEffect(() => {
    const el = scroller.current;
    if (!el || typeof ResizeObserver === "undefined") return;
    const ro = new ResizeObserver(() => resizedRef.current());
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const seen = intersecting.current;
    const io = new IntersectionObserver(
      (entries) => {
        for (const entry of entries) {
          if (entry.isIntersecting) seen.add(entry.target);
          else seen.delete(entry.target);
        }
        reportRef.current();
      },
      { root: el, threshold: [0, 0.5, 1] },
    );
    observer.current = io;
    // The bubbles already there: opened again, a conversation's messages are in the store before this effect runs,
    // and the layout effect below, which runs first, had no observer to give them to.
    watchBubbles(io, el);
    return () => {
      io.disconnect();
      observer.current = null;
      seen.clear();
      setOnScreen(conversationId, null);
    };
  }, [conversationId, setOnScreen]);

  // Every message bubble is watched (observing one twice is a no-op); removed ones simply stop intersecting.
  useLayoutEffect(() => {
    const io = observer.current;
    const el = scroller.current;
    if (io && el) watchBubbles(io, el);
  }, [items]);

  function requestOlder() {
    const el = scroller.current;
    if (!el || !hasMore || loading || !loaded) return;
    anchor.current = { height: el.scrollHeight, top: el.scrollTop, firstSeq };
    void loadOlder(conversationId);
  }

  // Back online with the list at its top (an older page failed while offline, and its error is cleared): load it.
  useEffect(() => {
    const el = scroller.current;
    if (connected && !error && positioned && el && el.scrollTop < EDGE) requestOlder();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only when the connection comes back
  }, [connected]);

  function onScroll() {
    const el = scroller.current;
    if (!el || !positioned) return;
    nearBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < EDGE;
    if (el.scrollTop < EDGE) requestOlder();
    report();
  }

  function jumpToLatest() {
    const el = scroller.current;
    if (!el) return;
    el.scrollTop = el.scrollHeight;
    nearBottom.current = true;
    report();
  }

  // Opening: older pages are loaded until the first unread message is, however many that takes.
  useEffect(() => {
    if (positioned || divider == null || dividerLoaded || !loaded || loading) return;
    void loadOlder(conversationId);
  }, [positioned, divider, dividerLoaded, loaded, loading, conversationId, loadOlder]);

  // Opening: on the divider when what is unread does not fit on screen, else at the bottom.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el || positioned || !loaded || divider === undefined || !dividerLoaded) return;
    const mark = el.querySelector<HTMLElement>("[data-testid=unread-divider]");
    const top = mark ? mark.getBoundingClientRect().top - el.getBoundingClientRect().top + el.scrollTop : null;
    if (top !== null && el.scrollHeight - top > el.clientHeight) {
      el.scrollTop = top - DIVIDER_MARGIN;
      nearBottom.current = false;
    } else {
      el.scrollTop = el.scrollHeight;
      nearBottom.current = true;
    }
    pendingCount.current = pending.length;
    newestKnown.current = items.at(-1)?.seq ?? 0;
    setPositioned(true);
  }, [positioned, loaded, divider, dividerLoaded, items, pending.length]);

  // Once positioned, and after every change of the list, what is on screen is reported again.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el || !positioned) return;
    const sent = pending.length > pendingCount.current;
    pendingCount.current = pending.length;
    const before = newestKnown.current;
    newestKnown.current = Math.max(before, items.at(-1)?.seq ?? 0);
    // Others' messages (not deleted ones: they never count, and there is nothing to read in them).
    const othersArrived = items.some((m) => m.seq > before && m.senderId !== userId && !m.deleted);
    // Someone is reading this list: the window is visible and focused, and the list is shown high enough.
    const watched = attending && (measure()?.readable ?? false);
    const held = anchor.current;
    if (held && held.firstSeq !== firstSeq) {
      anchor.current = null;
      el.scrollTop = el.scrollHeight - held.height + held.top;
    } else if (
      othersArrived &&
      !watched &&
      (awayFrom.current === null ? nearBottom.current : Math.abs(el.scrollTop - pinnedTop.current) <= 1)
    ) {
      // Nobody is reading (another tab or window has the focus, or the list is shown too small to read): the list
      // follows the arrivals only until the first of them reaches its top. Following to the bottom would show only
      // the last few on return, and the read (up to the highest seq on screen) would take the rest as seen.
      if (awayFrom.current === null) {
        // The first message not seen yet: an arrival, or one above it that was never on screen while looked at.
        awayFrom.current =
          items.find((m) => m.seq > Math.min(before, seenUpTo) && m.senderId !== userId && !m.deleted)?.seq ?? null;
        // "New messages" moves to the first of them: everything above it had been read at the bottom.
        setDivider(awayFrom.current);
      }
      const first = el.querySelector<HTMLElement>(`[data-seq="${awayFrom.current}"]`);
      // The divider above it, once drawn, is kept in view too.
      const above = first?.previousElementSibling;
      const mark = above?.matches("[data-testid=unread-divider]") ? above : first;
      const top = mark ? mark.getBoundingClientRect().top - el.getBoundingClientRect().top + el.scrollTop : Infinity;
      el.scrollTop = Math.min(el.scrollHeight, top - DIVIDER_MARGIN);
      // Where it was put: scrolled elsewhere since (a wheel over a window without the focus), it is not pulled back.
      pinnedTop.current = el.scrollTop;
      nearBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < EDGE;
    } else if ((nearBottom.current && awayFrom.current === null) || (sent && !unseenBelow)) {
      // A send scrolls to it only when no message of others' lies unseen below the view: a reply from the divider
      // stays put, for the jump would show the latest message, and the read (up to the highest seq on screen) would
      // take every message it skipped as seen.
      el.scrollTop = el.scrollHeight;
      nearBottom.current = true;
    } else if (sent) {
      // That reply goes out of sight: the note beside "N new ↓" follows it (sending, sent, refused).
      setReplyBelow(pending.at(-1)?.clientMsgId ?? null);
    }
    report();
    // report() reads the current render's values; it is meant to run when these change.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [items, pending, firstSeq, positioned]);

  // A first page shorter than the viewport cannot be scrolled, so older pages are fetched without a scroll.
  useEffect(() => {
    const el = scroller.current;
    if (!el || !positioned || !loaded || loading || !hasMore) return;
    if (el.scrollHeight <= el.clientHeight + EDGE) {
      anchor.current = { height: el.scrollHeight, top: el.scrollTop, firstSeq };
      void loadOlder(conversationId);
    }
  }, [positioned, loaded, loading, hasMore, firstSeq, conversationId, loadOlder]);

  const note = replyNote(replyBelow, pending, items);
  const arrival = useArrivals(items, positioned && loaded, userId);
  // Not those this tab's person removed or added: the list or the form said so already.
  const leftOrRemovedByOthers = useMemo(() => left.filter((l) => l.removedBy?.id !== userId), [left, userId]);
  useMemberNews(conversationId, leftOrRemovedByOthers, positioned && loaded, leftNews);
  const addedByOthers = useMemo(() => added.filter((a) => a.by?.id !== userId), [added, userId]);
  useMemberNews(conversationId, addedByOthers, positioned && loaded, joinedNews);

  return (
    <div className="message-area">
      {/* A region with a name, focusable: the keyboard scrolls it (Page Down), and a screen reader says what it is. */}
      <div
        className="message-scroller"
        data-testid="message-list"
        ref={scroller}
        onScroll={onScroll}
        role="region"
        tabIndex={0}
        aria-label={
          conversation === undefined
            ? "Messages"
            : kind === "direct"
              ? `Messages with ${conversation.title}`
              : `Messages in ${conversation.title}`
        }
      >
        {loaded && !hasMore && items.length > 0 && <p className="history-start">Start of the conversation</p>}
        {loading && <p className="history-status">Loading…</p>}
        {error && (
          <p className="history-status form-error" role="alert" data-testid="history-error">
            {!offline ? (
              <>
                {error}{" "}
                <button
                  type="button"
                  className="link"
                  onClick={() => {
                    refresh(conversationId);
                    requestOlder();
                  }}
                >
                  Retry
                </button>
              </>
            ) : (
              // Retrying cannot help yet; the store loads the open conversation again once the connection is back, and
              // an older page loads then if the list is still at its top (below).
              "Not connected: the messages load by themselves once the connection is back."
            )}
          </p>
        )}
        {loaded && items.length === 0 && pending.length === 0 && (
          <p className="history-start">
            No messages yet. Say hello!
            {kind === "direct" && (
              <>
                <br />
                Until one of you writes, <bdi>{conversation?.title}</bdi> may not see this conversation in their list.
              </>
            )}
          </p>
        )}
        {/* Not a live region itself: what arrives is said once, by the status below (useArrivals). */}
        {/* Hidden until positioned, not to flash at the top; but a first load that failed never positions it, and
            what the person queued there (offline) must show. */}
        <ol className="message-list" style={positioned || (error && !loaded) ? undefined : { visibility: "hidden" }}>
          {items.map((m, i) => (
            <Fragment key={m.id}>
              {placed.before.get(m.seq)?.map((l) => (
                <MemberLineItem key={`${l.kind}-${l.userId}`} line={l} userId={userId} />
              ))}
              <MessageItem
                message={m}
                own={m.senderId === userId}
                members={members}
                kind={kind}
                userId={userId}
                divider={m.seq === dividerBefore}
                continued={!placed.before.has(m.seq) && continuesRun(items[i - 1], m, m.seq === dividerBefore)}
              />
            </Fragment>
          ))}
          {placed.after.map((l) => (
            <MemberLineItem key={`${l.kind}-${l.userId}`} line={l} userId={userId} />
          ))}
          {pending.map((p) => (
            <PendingItem key={p.clientMsgId} conversationId={conversationId} item={p} />
          ))}
        </ol>
      </div>
      <p className="visually-hidden" role="status" data-testid="arrivals">
        {arrival}
      </p>
      <div className="list-float">
        <p className="reply-note" role="status" data-testid="reply-note" data-state={note ?? undefined}>
          {note && !atBottom ? REPLY_NOTE_TEXT[note] : null}
        </p>
        {positioned && !atBottom && (
          <button
            type="button"
            className="jump-to-latest"
            data-testid="jump-to-latest"
            data-count={unseen}
            aria-label={
              unseen > 0
                ? `${unseen} new ${unseen === 1 ? "message" : "messages"}, jump to the latest`
                : "Jump to the latest message"
            }
            onClick={jumpToLatest}
          >
            {unseen > 0 ? `${unseen} new` : "Latest"} <span aria-hidden="true">↓</span>
          </button>
        )}
      </div>
    </div>
  );
}

/**
 * A member who left the group, was removed from it or was added to it, among the messages at that time: "bob left",
 * "carol removed bob" ("You removed bob"), "carol added dave" ("You added dave", "carol added you"), or "dave joined"
 * when this tab saw them come and nobody said who added them.
 */
function MemberLineItem({ line, userId }: { line: MemberLine; userId: number | undefined }) {
  const time = <time dateTime={line.at}>{formatMessageTime(line.at)}</time>;
  if (line.kind === "left") {
    const by = line.removedBy;
    return (
      <li className="member-line" data-testid="member-left" data-user-id={line.userId}>
        {by ? (
          <>
            {by.id === userId ? "You" : <span dir="auto">{by.name}</span>} removed <span dir="auto">{line.name}</span>
          </>
        ) : (
          <>
            <span dir="auto">{line.name}</span> left
          </>
        )}{" "}
        {time}
      </li>
    );
  }
  const who = line.userId === userId ? "you" : <span dir="auto">{line.name}</span>;
  return (
    <li className="member-line" data-testid="member-added" data-user-id={line.userId}>
      {line.by === null ? (
        <>{who === "you" ? "You" : who} joined</>
      ) : (
        <>
          {line.by.id === userId ? "You" : <span dir="auto">{line.by.name}</span>} added {who}
        </>
      )}{" "}
      {time}
    </li>
  );
}

/** The same shape with or without the divider, so that a divider moving does not remount the message's bubble. */
function MessageItem({ divider, ...message }: MessageProps & { divider: boolean }) {
  return (
    <>
      {divider && <UnreadDivider />}
      <Message {...message} />
    </>
  );
}
