"use client";

import { useEffect, useId, useState, type FormEvent, type KeyboardEvent } from "react";
import { api } from "@/components/lib/api";
import { useChatStore } from "@/components/providers/ChatProvider";
import { TextField, useServerCall } from "./form";

const SEPARATORS = /[\s,]+/;
/** Waits this long after a keystroke before asking for names, so typing a name costs one or two look-ups. */
const LOOKUP_DELAY_MS = 150;

/** The names typed so far and the one being typed (the text after the last separator). */
function splitMembers(text: string): { done: string[]; typing: string } {
  const parts = text.split(SEPARATORS);
  const typing = parts.pop() ?? "";
  return { done: parts.filter(Boolean), typing };
}

/**
 * Names of people the user already talks to that start with `prefix` (the server finds only those), minus
 * `exclude`. Empty while nothing is typed or the server refuses (an impossible name, a limit).
 */
function useNameSuggestions(prefix: string, exclude: string[]): string[] {
  const [found, setFound] = useState<{ prefix: string; names: string[] }>({ prefix: "", names: [] });

  useEffect(() => {
    if (prefix === "") return;
    let live = true;
    const timer = setTimeout(() => {
      void api.lookupUsers(prefix).then((res) => {
        if (live) setFound({ prefix, names: res.ok ? res.names : [] });
      });
    }, LOOKUP_DELAY_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [prefix]);

  if (prefix === "" || found.prefix !== prefix) return [];
  const taken = new Set(exclude.map((n) => n.toLowerCase()));
  return found.names.filter((n) => !taken.has(n.toLowerCase()) && n !== prefix);
}

/** `onDone` once the conversation is created (it opens); `onCancel` for Cancel and Escape. */
export function NewConversationForm({ onDone, onCancel }: { onDone: () => void; onCancel: () => void }) {
  const createConversation = useChatStore((s) => s.createConversation);
  const [members, setMembers] = useState("");
  const [title, setTitle] = useState("");
  const { busy, error, setError, call } = useServerCall();
  const { done, typing } = splitMembers(members);
  const suggestions = useNameSuggestions(typing, done);
  const [highlight, setHighlight] = useState(-1);
  const [dismissed, setDismissed] = useState(false);
  const listId = useId();
  const showList = suggestions.length > 0 && !dismissed;
  const active = showList && highlight >= 0 && highlight < suggestions.length ? highlight : -1;

  function type(text: string) {
    setMembers(text);
    setHighlight(-1);
    setDismissed(false);
  }

  /** Puts `name` in place of the name being typed, ready for the next one. */
  function choose(name: string) {
    type(`${[...done, name].join(", ")}, `);
  }

  function onKeyDown(event: KeyboardEvent<HTMLInputElement>) {
    if (!showList) return;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      // Cycles through the names and back to none (the typed text), as a datalist does.
      const states = suggestions.length + 1;
      const step = event.key === "ArrowDown" ? 1 : -1;
      setHighlight(((active + 1 + step + states) % states) - 1);
    } else if (event.key === "Enter" && active >= 0) {
      event.preventDefault();
      choose(suggestions[active]!);
    } else if (event.key === "Escape") {
      event.preventDefault();
      setDismissed(true);
    }
  }

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    const memberNames = members.split(SEPARATORS).filter(Boolean);
    if (memberNames.length === 0) {
      setError("Name a person to start a conversation with.");
      return;
    }
    if (await call(() => createConversation({ memberNames, title: title.trim() || undefined }))) onDone();
  }

  return (
    <form
      className="new-conversation"
      onSubmit={submit}
      noValidate
      data-testid="new-conversation-form"
      // Escape closes the form, unless it only closed the list of names (which marks it handled).
      onKeyDown={(event) => {
        if (event.key === "Escape" && !event.defaultPrevented) {
          event.preventDefault();
          onCancel();
        }
      }}
    >
      <div className="combobox">
        <TextField
          id="member-input"
          // The rule is in the label, not only the placeholder: a placeholder goes once typing starts, and at a
          // sidebar's width a sentence there was cut off.
          label={
            <>
              People <span className="optional">(commas or spaces between names)</span>
            </>
          }
          value={members}
          onValue={type}
          onKeyDown={onKeyDown}
          onBlur={() => setDismissed(true)}
          onFocus={() => setDismissed(false)}
          placeholder="e.g. ada_l, grace"
          autoCapitalize="none"
          autoComplete="off"
          spellCheck={false}
          autoFocus
          role="combobox"
          aria-autocomplete="list"
          aria-expanded={showList}
          aria-controls={listId}
          aria-activedescendant={active >= 0 ? `${listId}-${active}` : undefined}
        />
        <ul id={listId} role="listbox" aria-label="People you talk to" className="suggestions" hidden={!showList}>
          {showList &&
            suggestions.map((name, i) => (
              <li
                key={name}
                id={`${listId}-${i}`}
                role="option"
                aria-selected={i === active}
                className={i === active ? "suggestion active" : "suggestion"}
                data-testid="member-suggestion"
                // Before the input's blur, which would close the list under the pointer.
                onMouseDown={(e) => e.preventDefault()}
                onClick={() => choose(name)}
              >
                {name}
              </li>
            ))}
        </ul>
      </div>
      <TextField
        id="title-input"
        label={
          <>
            Title <span className="optional">(optional; makes a group, even of two)</span>
          </>
        }
        value={title}
        onValue={setTitle}
        autoComplete="off"
      />
      {error && (
        <p className="form-error" role="alert" data-testid="create-error">
          {error}
        </p>
      )}
      <div className="form-actions">
        <button type="button" className="button ghost" onClick={onCancel}>
          Cancel
        </button>
        {/* Not `disabled` while busy: a disabled button loses the keyboard's focus (a second submit is ignored). */}
        <button type="submit" className="button primary" data-testid="create-conversation" aria-disabled={busy}>
          {busy ? "Creating…" : "Start"}
        </button>
      </div>
    </form>
  );
}
