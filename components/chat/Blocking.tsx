"use client";

import { useEffect, useRef, useState } from "react";
import type { BlockList, ConversationDTO, Result, UserDTO } from "@/server/contracts";
import { api } from "@/components/lib/api";
import { useChatStore } from "@/components/providers/ChatProvider";
import { selectUser } from "@/components/store/selectors";
import { announce } from "./Announcer";
import { focusLost } from "./focus";
import { TextField, useServerCall } from "./form";

/** The person at the other end of a direct conversation, whom its member may block (a lab bot cannot be). */
export function useOtherPerson(conversation: ConversationDTO): UserDTO | null {
  const me = useChatStore(selectUser);
  if (conversation.kind !== "direct") return null;
  const other = conversation.members.find((m) => m.id !== me?.id);
  return other && !other.bot ? other : null;
}

export function useIsBlocked(person: UserDTO | null): boolean {
  return useChatStore((s) => person !== null && s.blocked.some((b) => b.id === person.id));
}

/**
 * Block (by name) and unblock (by id) over HTTP; the answer is the whole list, which every other tab hears as
 * `blocks:changed`. `busy` while a call is out, `error` the server's refusal. Each resolves with whether it worked.
 */
function useBlocking() {
  const setBlocked = useChatStore((s) => s.setBlocked);
  const me = useChatStore(selectUser);
  const { busy, error, setError, call } = useServerCall();
  // An answer from while the connection was down ("Cannot reach the server") no longer holds once it is back.
  const connected = useChatStore((s) => s.connected);
  useEffect(() => {
    if (connected) setError(null);
  }, [connected, setError]);
  const run = (request: () => Promise<Result<BlockList>>, done?: (list: BlockList) => void) =>
    call(async () => {
      const res = await request();
      if (!res.ok) return res.error.message;
      // For whoever was signed in when it was asked: dropped if they signed out meanwhile.
      if (me) setBlocked(res, me.id);
      done?.(res);
      return null;
    });
  return {
    busy,
    error,
    block: (name: string) => run(() => api.block(name)),
    /** Blocks a name typed by hand, then says whom (as the server spells the name) to a screen reader. */
    blockNamed: (name: string) =>
      run(
        () => api.block(name),
        ({ blocked }) => {
          const person = blocked.find((b) => b.name.toLowerCase() === name.toLowerCase());
          announce(`Blocked ${person?.name ?? name}.`);
        },
      ),
    unblock: (person: UserDTO) => run(() => api.unblock(person.id)),
  };
}

/** What blocking costs, asked before every block: a block cuts the direct conversation both ways. */
function blockQuestion(name: string, where: "this conversation" | "your direct conversation"): string {
  return (
    `Block ${name}? Neither of you will be able to write in ${where}, and ${name} will not be able to start a ` +
    "conversation with you. Groups you share are not affected. You can unblock them later."
  );
}

/** "Block" / "Unblock" among a direct conversation's actions; a refusal goes to `onError` (null: none). */
export function BlockToggle({ person, onError }: { person: UserDTO; onError(message: string | null): void }) {
  const blocked = useIsBlocked(person);
  const { busy, error, block, unblock } = useBlocking();
  useEffect(() => onError(error), [error, onError]);
  const question = blockQuestion(person.name, "this conversation");
  return (
    <button
      type="button"
      className="button small ghost"
      data-testid="block-toggle"
      // Not `disabled`: a disabled button loses the keyboard's focus, which would land on the page's top.
      aria-disabled={busy}
      onClick={() => {
        if (busy) return;
        if (blocked) void unblock(person);
        else if (window.confirm(question)) void block(person.name);
      }}
    >
      {blocked ? "Unblock" : "Block"}
    </button>
  );
}

/** In place of the composer while the user has blocked the other member. */
export function BlockedNote({ person, onUnblock }: { person: UserDTO; onUnblock?: () => void }) {
  const { busy, error, unblock } = useBlocking();
  return (
    <div className="composer blocked-note" data-testid="blocked-note">
      <p>
        You blocked {person.name}. Neither of you can write here until you unblock them.{" "}
        <button
          type="button"
          className="button small"
          aria-disabled={busy}
          onClick={() => {
            if (busy) return;
            onUnblock?.();
            void unblock(person);
          }}
        >
          Unblock
        </button>
      </p>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/**
 * The people the user blocked, under the list, and a name to block: one whose conversation is gone can still be
 * unblocked, and someone met only in a group (a stranger who keeps adding you to new ones) can be blocked.
 */
export function BlockedPeople() {
  const blocked = useChatStore((s) => s.blocked);
  const { busy, error, blockNamed, unblock } = useBlocking();
  const [name, setName] = useState("");
  const list = useRef<HTMLUListElement>(null);
  const disclosure = useRef<HTMLDetailsElement>(null);
  /** The place in the list of the person last unblocked here: their button goes, the focus goes to the next one's. */
  const unblockedAt = useRef<number | null>(null);
  useEffect(() => {
    const at = unblockedAt.current;
    if (at === null || busy) return;
    unblockedAt.current = null;
    if (!focusLost()) return;
    const buttons = list.current?.querySelectorAll<HTMLElement>("button") ?? [];
    (buttons[Math.min(at, buttons.length - 1)] ?? document.getElementById("block-name"))?.focus();
  }, [blocked, busy]);
  return (
    <details
      ref={disclosure}
      className="blocked-people"
      data-testid="blocked-people"
      // Escape closes it back onto its summary, as the members list, the row menu and the New form do.
      onKeyDown={(event) => {
        const details = disclosure.current;
        if (event.key !== "Escape" || !details?.open) return;
        event.stopPropagation();
        details.open = false;
        details.querySelector("summary")?.focus();
      }}
    >
      <summary>Blocked people{blocked.length > 0 ? ` (${blocked.length})` : ""}</summary>
      {blocked.length > 0 && (
        <ul ref={list}>
          {blocked.map((person, index) => (
            <li key={person.id}>
              <span>{person.name}</span>
              <button
                type="button"
                className="button small ghost"
                aria-disabled={busy}
                aria-label={`Unblock ${person.name}`}
                onClick={() => {
                  unblockedAt.current = index;
                  void unblock(person);
                }}
              >
                Unblock
              </button>
            </li>
          ))}
        </ul>
      )}
      <form
        className="block-form"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          const typed = name.trim();
          if (typed === "" || busy || !window.confirm(blockQuestion(typed, "your direct conversation"))) return;
          void blockNamed(typed).then((done) => done && setName(""));
        }}
      >
        <TextField
          id="block-name"
          label="Block someone by name"
          value={name}
          onValue={setName}
          autoCapitalize="none"
          autoComplete="off"
          spellCheck={false}
        />
        {/* Not `disabled`: a disabled button loses the keyboard's focus, as it would once a block empties the field. */}
        <button type="submit" className="button small" aria-disabled={busy || name.trim() === ""}>
          Block
        </button>
      </form>
      {error && (
        <p className="form-error" role="alert" data-testid="block-error">
          {error}
        </p>
      )}
    </details>
  );
}
