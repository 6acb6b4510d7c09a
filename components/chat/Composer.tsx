"use client";

import {
  useEffect,
  useId,
  useLayoutEffect,
  useRef,
  useState,
  type FormEvent,
  type KeyboardEvent,
  type SyntheticEvent,
} from "react";
import { hasVisibleText, MESSAGE_MAX_LENGTH, messageLength } from "@/server/contracts/limits";
import { useChatStore } from "@/components/providers/ChatProvider";
import { draftKey } from "@/components/store/drafts";
import { selectConversation } from "@/components/store/selectors";
import { applyMention, mentionOptions, mentionQueryAt, type MentionOption } from "./mention-query";

/** The counter appears within this share of the limit, so most messages never see it. */
const COUNTER_FROM = Math.floor(MESSAGE_MAX_LENGTH * 0.9);
const count = new Intl.NumberFormat("en-US");

/** Keyed by conversation (ConversationPane), so each conversation starts from its own saved draft. */
export function Composer({ conversationId }: { conversationId: number }) {
  const sendMessage = useChatStore((s) => s.sendMessage);
  const saveDraft = useChatStore((s) => s.saveDraft);
  const draftOf = useChatStore((s) => s.draftOf);
  const conversation = useChatStore(selectConversation(conversationId));
  const userId = useChatStore((s) => s.user?.id);
  const [draft, setDraft] = useState(() => draftOf(conversationId));
  const inputRef = useRef<HTMLTextAreaElement>(null);

  // Mention suggestions: where the caret is (null until the person types or moves it), whether the field has the
  // focus, the option highlighted, and the token (by the index of its @) whose list was closed with Escape.
  const [caret, setCaret] = useState<number | null>(null);
  const [focused, setFocused] = useState(true);
  const [highlight, setHighlight] = useState(0);
  const [dismissed, setDismissed] = useState<number | null>(null);
  /** A caret position to restore once React has put a picked mention into the textarea. */
  const placeCaret = useRef<number | null>(null);
  const listId = useId();

  const query = caret === null ? null : mentionQueryAt(draft, caret);
  const options =
    query && conversation ? mentionOptions(query.prefix, conversation.members, userId, conversation.kind) : [];
  const open = focused && query !== null && options.length > 0 && dismissed !== query.start;
  const active = open ? Math.min(highlight, options.length - 1) : -1;

  // What the server counts: the trimmed text's characters (an emoji is one).
  const length = messageLength(draft);
  const tooLong = length > MESSAGE_MAX_LENGTH;
  // Spaces, zero-width characters and the like alone: the server refuses them, so Send says so by being off.
  const blank = !hasVisibleText(draft);

  // One draft per conversation, the same in every tab: another tab's edit, or its send (which removes the draft),
  // replaces the text here while this tab still shows what that tab started from. Without it, a draft sent in one
  // tab stayed in the other with Send on, and went out twice (a newcomer's walkthrough). Text edited here since is
  // this tab's own and stays (its next keystroke saves it).
  useEffect(() => {
    if (userId === undefined) return;
    const key = draftKey(userId, conversationId);
    const onStorage = (event: StorageEvent) => {
      if (event.key !== key) return;
      setDraft((shown) => (shown === (event.oldValue ?? "") ? (event.newValue ?? "") : shown));
    };
    window.addEventListener("storage", onStorage);
    return () => window.removeEventListener("storage", onStorage);
  }, [userId, conversationId]);

  useLayoutEffect(() => {
    const at = placeCaret.current;
    if (at === null) return;
    placeCaret.current = null;
    inputRef.current?.setSelectionRange(at, at);
  }, [draft]);

  useLayoutEffect(() => {
    if (active >= 0) document.getElementById(`${listId}-${active}`)?.scrollIntoView({ block: "nearest" });
  }, [active, listId]);

  /** Follows the caret; a different token (or none) forgets an earlier Escape and starts at the first option. */
  function follow(text: string, at: number | null) {
    const next = at === null ? null : mentionQueryAt(text, at);
    if (next?.start !== query?.start || next?.prefix !== query?.prefix) setHighlight(0);
    if (next?.start !== dismissed) setDismissed(null);
    setCaret(at);
  }

  function edit(text: string, at: number | null) {
    setDraft(text);
    saveDraft(conversationId, text);
    follow(text, at);
  }

  function pick(option: MentionOption) {
    if (!query) return;
    const next = applyMention(draft, query, option.name);
    placeCaret.current = next.caret;
    edit(next.text, next.caret);
    inputRef.current?.focus();
  }

  function send() {
    if (blank || tooLong) return;
    // The queue owns the message from here (shown pending, sent when it can be), so the composer is free at once.
    void sendMessage(conversationId, draft);
    setDraft("");
    setCaret(0);
    inputRef.current?.focus();
  }

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    send();
  }

  function onSelect(event: SyntheticEvent<HTMLTextAreaElement>) {
    const el = event.currentTarget;
    const at = el.selectionStart === el.selectionEnd ? el.selectionStart : null;
    if (at !== caret) follow(el.value, at);
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.nativeEvent.isComposing) return;
    if (open) {
      const option = options[active];
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        setHighlight((active + step + options.length) % options.length);
        return;
      }
      if (((event.key === "Enter" && !event.shiftKey) || (event.key === "Tab" && !event.shiftKey)) && option) {
        event.preventDefault();
        pick(option);
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        setDismissed(query.start);
        return;
      }
    }
    if (event.key !== "Enter" || event.shiftKey) return;
    event.preventDefault();
    send();
  }

  return (
    <form className="composer" onSubmit={onSubmit}>
      <ul
        id={listId}
        role="listbox"
        aria-label="Mention someone"
        className="mention-suggestions"
        data-testid="mention-suggestions"
        hidden={!open}
      >
        {open &&
          options.map((option, i) => (
            <li
              key={option.name}
              id={`${listId}-${i}`}
              role="option"
              aria-selected={i === active}
              className={i === active ? "mention-option active" : "mention-option"}
              data-testid="mention-option"
              data-name={option.name}
              // Keeps the caret (and the list) in the textarea while the option is clicked.
              onMouseDown={(e) => e.preventDefault()}
              onClick={() => pick(option)}
            >
              <span className="mention-option-name">@{option.name}</span>
              {option.everyone && <span className="mention-option-note">everyone in this group</span>}
            </li>
          ))}
      </ul>
      {/*
        A textarea cannot be a combobox (ARIA in HTML allows it no role), so a screen reader is not told that the list
        opened by the textarea itself: this status says so, once each time it opens or its length changes.
      */}
      <span className="visually-hidden" role="status" data-testid="mention-status">
        {open
          ? `${options.length} ${options.length === 1 ? "person" : "people"} to mention: up and down to choose, Enter or Tab to pick.`
          : ""}
      </span>
      <div className="composer-row">
        <textarea
          ref={inputRef}
          data-testid="message-input"
          className="composer-input"
          value={draft}
          rows={1}
          placeholder="Write a message…"
          aria-label="Message"
          aria-invalid={tooLong || undefined}
          aria-describedby={length >= COUNTER_FROM ? `composer-counter-${conversationId}` : undefined}
          aria-autocomplete="list"
          aria-controls={listId}
          aria-activedescendant={active >= 0 ? `${listId}-${active}` : undefined}
          // On a touch screen a focused field brings the on-screen keyboard up, over half the messages, at every
          // open: there the person taps the field when they mean to write.
          autoFocus={typeof window !== "undefined" && !window.matchMedia("(pointer: coarse)").matches}
          onChange={(e) => edit(e.target.value, e.target.selectionStart)}
          onSelect={onSelect}
          onKeyDown={onKeyDown}
          onFocus={() => setFocused(true)}
          onBlur={() => setFocused(false)}
        />
        <button
          type="submit"
          className="button primary"
          data-testid="send-button"
          disabled={tooLong || blank}
          // Keeps the caret in the textarea when the button is clicked.
          onMouseDown={(e) => e.preventDefault()}
        >
          Send
        </button>
      </div>
      {length >= COUNTER_FROM && (
        <p
          id={`composer-counter-${conversationId}`}
          className={tooLong ? "composer-counter over" : "composer-counter"}
          data-testid="char-counter"
          data-over={tooLong}
        >
          {count.format(length)} / {count.format(MESSAGE_MAX_LENGTH)}
          {tooLong && ` — ${count.format(length - MESSAGE_MAX_LENGTH)} too many to send`}
        </p>
      )}
    </form>
  );
}
