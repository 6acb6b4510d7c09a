"use client";

import { useEffect, useId, useState, type KeyboardEvent, type ReactNode } from "react";
import { api } from "@/components/lib/api";
import { TextField } from "./form";

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

/** The names in a People field's text. */
export function namesIn(text: string): string[] {
  return text.split(SEPARATORS).filter(Boolean);
}

/**
 * A text field for people's names, with names of people the user already talks to offered as they type (a
 * combobox: ↑/↓, Enter, Escape). `exclude`: names not to offer (those already chosen elsewhere, such as a group's
 * members).
 */
export function PeopleField({
  id,
  label,
  value,
  onValue,
  exclude = [],
  placeholder,
}: {
  id: string;
  label: ReactNode;
  value: string;
  onValue: (text: string) => void;
  exclude?: readonly string[];
  placeholder?: string;
}) {
  const { done, typing } = splitMembers(value);
  const suggestions = useNameSuggestions(typing, [...done, ...exclude]);
  const [highlight, setHighlight] = useState(-1);
  const [dismissed, setDismissed] = useState(false);
  const listId = useId();
  const showList = suggestions.length > 0 && !dismissed;
  const active = showList && highlight >= 0 && highlight < suggestions.length ? highlight : -1;

  function type(text: string) {
    onValue(text);
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

  return (
    <div className="combobox">
      <TextField
        id={id}
        label={label}
        value={value}
        onValue={type}
        onKeyDown={onKeyDown}
        onBlur={() => setDismissed(true)}
        onFocus={() => setDismissed(false)}
        placeholder={placeholder}
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
  );
}
