"use client";

import { useEffect, useRef, useState, type FormEvent } from "react";
import type { ConversationDTO, UserDTO } from "@/server/contracts";
import { useChatStore } from "@/components/providers/ChatProvider";
import { selectActiveConversationId, selectConversation, selectConversationError } from "@/components/store/selectors";
import { announce } from "./Announcer";
import { useAskedAction } from "./asked-action";
import { BlockedNote, BlockToggle, useIsBlocked, useOtherPerson } from "./Blocking";
import { Composer } from "./Composer";
import { focusLost } from "./focus";
import { useServerCall } from "./form";
import { MessageList } from "./MessageList";
import { namesIn, PeopleField } from "./PeopleField";

/**
 * Add people and leave (groups), and delete: "Delete" only where the server would take it (`canDelete`: either
 * member of a direct conversation, a group's owner); its refusal is still shown should that change meanwhile.
 */
function ConversationActions({
  conversation,
  onBlockError,
  adding,
  onAdd,
}: {
  conversation: ConversationDTO;
  onBlockError(message: string | null): void;
  /** Whether the form to add people is open (the button then says so), and what opens or closes it. */
  adding: boolean;
  onAdd(): void;
}) {
  const leave = useChatStore((s) => s.leaveConversation);
  const remove = useChatStore((s) => s.deleteConversation);
  const person = useOtherPerson(conversation);
  const [busy, setBusy] = useState(false);
  const group = conversation.kind === "group";

  async function run(question: string, action: (conversationId: number) => Promise<string | null>, done: string) {
    if (busy || !window.confirm(question)) return;
    setBusy(true);
    // Its row and pane go, and the focus with them: without a word a screen reader would only say where it landed.
    if ((await action(conversation.id)) === null) announce(done);
    setBusy(false);
  }

  return (
    <div className="pane-actions">
      {person && <BlockToggle person={person} onError={onBlockError} />}
      {group && (
        <button
          type="button"
          className="button small ghost"
          data-testid="add-people"
          aria-expanded={adding}
          aria-controls="add-people-form"
          onClick={onAdd}
        >
          <span>
            Add<span className="wide-only"> people</span>
          </span>
        </button>
      )}
      {group && (
        <button
          type="button"
          className="button small ghost"
          data-testid="leave-conversation"
          // Not `disabled`: a disabled button loses the keyboard's focus (run() ignores a click while busy).
          aria-disabled={busy}
          onClick={() =>
            void run(
              `Leave “${conversation.title}”? Its messages will no longer reach you.`,
              leave,
              `Left “${conversation.title}”.`,
            )
          }
        >
          <span>
            Leave<span className="wide-only"> group</span>
          </span>
        </button>
      )}
      {conversation.canDelete && (
        <button
          type="button"
          className="button small ghost danger"
          data-testid="delete-conversation"
          aria-disabled={busy}
          onClick={() =>
            void run(
              group
                ? `Delete “${conversation.title}” and its messages for every member?`
                : `Delete your conversation with ${conversation.title} and its messages for both of you?`,
              remove,
              group ? `Deleted “${conversation.title}”.` : `Deleted your conversation with ${conversation.title}.`,
            )
          }
        >
          <span>
            Delete<span className="wide-only"> conversation</span>
          </span>
        </button>
      )}
    </div>
  );
}

function OpenConversation({ id }: { id: number }) {
  const conversation = useChatStore(selectConversation(id));
  const close = useChatStore((s) => s.closeConversation);
  const actionError = useChatStore(selectConversationError(id));
  const [blockError, setBlockError] = useState<string | null>(null);
  const [adding, setAdding] = useState(false);
  if (!conversation) return <EmptyPane text="This conversation is not available." />;

  return (
    <section className="pane" aria-label={conversation.title} data-testid="conversation-pane">
      <header className="pane-head">
        <button type="button" className="button ghost back" onClick={close} aria-label="Back to conversations">
          ←
        </button>
        <div className="pane-titles">
          <h2 className="pane-title" data-testid="conversation-title">
            {conversation.title}
          </h2>
          <PaneMembers conversation={conversation} />
        </div>
        <ConversationActions
          key={id}
          conversation={conversation}
          onBlockError={setBlockError}
          adding={adding}
          onAdd={() => setAdding((open) => !open)}
        />
      </header>
      {adding && conversation.kind === "group" && (
        <AddPeopleForm conversation={conversation} onClose={() => setAdding(false)} />
      )}
      {(actionError ?? blockError) && (
        <p className="form-error pane-error" role="alert" data-testid="conversation-action-error">
          {actionError ?? blockError}
        </p>
      )}
      <HandedOn key={`owner-${id}`} conversation={conversation} />
      <MessageList key={id} conversationId={id} />
      <ComposerOrBlocked key={`composer-${id}`} conversation={conversation} />
    </section>
  );
}

/**
 * The open group handed to this user while they look at it (its owner left, and they have been in it longest): said
 * under the header, so that Remove and Delete appearing is explained. A live region from the pane's start (empty
 * until then), so a screen reader reads it out beside the announcer's news of the leave. Keyed by the conversation,
 * so it starts afresh with each.
 */
function HandedOn({ conversation }: { conversation: ConversationDTO }) {
  const { canDelete, kind, title } = conversation;
  const [shown, setShown] = useState(canDelete);
  const [note, setNote] = useState<string | null>(null);
  if (shown !== canDelete) {
    setShown(canDelete);
    setNote(
      kind === "group" && canDelete
        ? `You are now the owner of “${title}”: you can remove people from it, and delete it.`
        : null,
    );
  }
  return (
    <p className={note ? "pane-note" : "visually-hidden"} role="status" data-testid="owner-note">
      {note}
    </p>
  );
}

/**
 * Names people to add to the group, offering those the user talks to who are not in it yet. Closes once they are
 * in (the members line shows them) or on Cancel and Escape; the focus goes back to "Add people".
 */
function AddPeopleForm({ conversation, onClose }: { conversation: ConversationDTO; onClose(): void }) {
  const addMembers = useChatStore((s) => s.addMembers);
  const [names, setNames] = useState("");
  const { busy, error, setError, call } = useServerCall();

  function close() {
    onClose();
    // After React has removed the form: the button it came from keeps the keyboard's place.
    requestAnimationFrame(() => document.querySelector<HTMLElement>('[data-testid="add-people"]')?.focus());
  }

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    const memberNames = namesIn(names);
    if (memberNames.length === 0) {
      setError("Name a person to add.");
      return;
    }
    if (await call(() => addMembers(conversation.id, memberNames))) {
      announce(`Added ${memberNames.join(", ")} to “${conversation.title}”.`);
      close();
    }
  }

  return (
    <form
      id="add-people-form"
      className="add-people"
      onSubmit={submit}
      noValidate
      data-testid="add-people-form"
      aria-label={`Add people to “${conversation.title}”`}
      onKeyDown={(event) => {
        if (event.key === "Escape" && !event.defaultPrevented) {
          event.preventDefault();
          close();
        }
      }}
    >
      <PeopleField
        id="add-member-input"
        label={
          <>
            Add people <span className="optional">(they will see its history; none of it unread)</span>
          </>
        }
        value={names}
        onValue={setNames}
        exclude={conversation.members.map((m) => m.name)}
        placeholder="e.g. ada_l, grace"
      />
      {error && (
        <p className="form-error" role="alert" data-testid="add-people-error">
          {error}
        </p>
      )}
      <div className="form-actions">
        <button type="button" className="button ghost" onClick={close}>
          Cancel
        </button>
        <button type="submit" className="button primary" data-testid="add-people-submit" aria-disabled={busy}>
          {busy ? "Adding…" : "Add"}
        </button>
      </div>
    </form>
  );
}

/**
 * Who is in the conversation, on one line cut with an ellipsis: a group's starts with how many, so a big one says
 * its size however narrow the screen. A group's line opens the whole list, one name a line (a tooltip alone
 * reaches neither a touch screen nor the keyboard).
 */
function PaneMembers({ conversation }: { conversation: ConversationDTO }) {
  const names = conversation.members.map(memberLabel);
  if (conversation.kind === "group") return <GroupMembers conversation={conversation} />;
  return (
    <p className="pane-members" data-testid="conversation-members" title={names.join(", ")}>
      {names.join(", ")}
    </p>
  );
}

const memberLabel = (m: UserDTO) => (m.bot ? `${m.name} (bot)` : m.name);

/**
 * A group's members line and the list it opens; Escape or a click elsewhere closes it. To the group's owner (the
 * one who may delete it) each other member has "Remove" (asked first: someone removed cannot be added back).
 */
function GroupMembers({ conversation }: { conversation: ConversationDTO }) {
  const disclosure = useRef<HTMLDetailsElement>(null);
  const [open, setOpen] = useState(false);
  const me = useChatStore((s) => s.user?.id);
  const removeMember = useChatStore((s) => s.removeMember);
  const { busy, error, run } = useAskedAction();
  const names = conversation.members.map(memberLabel);

  async function remove(member: UserDTO) {
    const question =
      `Remove ${member.name} from “${conversation.title}”? The group leaves their list, ` +
      "and they cannot be added back.";
    const done = `Removed ${member.name} from “${conversation.title}”.`;
    if (!(await run(question, () => removeMember(conversation.id, member.id), done))) return;
    // Their row went with its button: the members line keeps the keyboard's place.
    disclosure.current?.querySelector("summary")?.focus();
  }

  useEffect(() => {
    if (!open) return;
    const outside = (event: PointerEvent) => {
      if (!disclosure.current?.contains(event.target as Node)) setOpen(false);
    };
    document.addEventListener("pointerdown", outside);
    return () => document.removeEventListener("pointerdown", outside);
  }, [open]);
  const size = `${names.length} ${names.length === 1 ? "member" : "members"}`;
  return (
    <details
      ref={disclosure}
      className="pane-members members-disclosure"
      open={open}
      onToggle={(event) => setOpen(event.currentTarget.open)}
      onKeyDown={(event) => {
        if (event.key !== "Escape" || !open) return;
        event.stopPropagation();
        setOpen(false);
        disclosure.current?.querySelector("summary")?.focus();
      }}
    >
      <summary data-testid="conversation-members" title={names.join(", ")}>
        {`${size}: ${names.join(", ")}`}
      </summary>
      <ul className="members-list" data-testid="members-list" aria-label={size}>
        {conversation.members.map((member) => (
          <li key={member.id} data-testid="members-list-item">
            <span>
              <span dir="auto">{memberLabel(member)}</span>
              {member.id === me && <span className="optional"> (you)</span>}
            </span>
            {conversation.canDelete && member.id !== me && (
              <button
                type="button"
                className="button small ghost danger"
                data-testid="remove-member"
                aria-label={`Remove ${member.name} from the group`}
                aria-disabled={busy}
                onClick={() => void remove(member)}
              >
                Remove
              </button>
            )}
          </li>
        ))}
        {error && (
          <li className="form-error" role="alert" data-testid="remove-member-error">
            {error}
          </li>
        )}
      </ul>
    </details>
  );
}

/** The composer, or while the user has blocked the other member, a note that says so (the server refuses a send). */
function ComposerOrBlocked({ conversation }: { conversation: ConversationDTO }) {
  const person = useOtherPerson(conversation);
  const blocked = useIsBlocked(person);
  // Unblocked from the note: its button goes with it, and the focus goes to the composer that takes its place
  // (not when the unblock came from elsewhere, such as the list of blocked people, nor on a touch screen, where a
  // focused field brings the on-screen keyboard up).
  const wasBlocked = useRef(blocked);
  const fromNote = useRef(false);
  useEffect(() => {
    if (wasBlocked.current && !blocked && fromNote.current && focusLost() && !matchMedia("(pointer: coarse)").matches)
      document.querySelector<HTMLElement>('[data-testid="message-input"]')?.focus();
    wasBlocked.current = blocked;
    if (!blocked) fromNote.current = false;
  }, [blocked]);
  if (person && blocked) return <BlockedNote person={person} onUnblock={() => (fromNote.current = true)} />;
  return <Composer conversationId={conversation.id} />;
}

function EmptyPane({ text }: { text: string }) {
  return (
    <section className="pane pane-empty" data-testid="empty-state">
      <p>{text}</p>
    </section>
  );
}

export function ConversationPane() {
  const active = useChatStore(selectActiveConversationId);
  if (active === null) return <EmptyPane text="Pick a conversation, or start a new one." />;
  // Keyed: what one conversation showed (a refused block) does not stay on the next.
  return <OpenConversation key={active} id={active} />;
}
