import type { MessageDTO, UnreadUpdate } from "../../contracts/index.ts";

/** When a mute was asked, as the journal orders asks and answers, and what could happen around it. */
export interface MuteIssued {
  /** Its number among the pair's mutes. */
  ask: number;
  at: number;
  /**
   * No other mute of the pair was in flight at any time during this one's: none when it was asked, and none asked
   * before it was answered (a later one may commit a higher version first, and this one's answer then shows it).
   */
  alone: boolean;
  /** No earlier mute of the pair went unanswered or was refused. */
  cleanBefore: boolean;
}

const key = (userId: number, conversationId: number) => `${userId}:${conversationId}`;

/**
 * What the simulated tabs asked the server and what it acknowledged, recorded at the transport (so it sees every
 * command the real store sends, retries included). The round's checks judge the database, Redis and every store
 * against it: an acknowledged message, read, mute or mark must not be lost, and a count may only drop, a conversation
 * only disappear, after something that can cause it was asked for.
 */
export class Journal {
  /** clientMsgId → the acknowledged message and its sender. */
  readonly messages = new Map<string, { userId: number; message: MessageDTO }>();
  /** Acknowledged reads: the cursor must end at least at `seq` (unless the user left or the conversation went). */
  readonly reads: { userId: number; conversationId: number; seq: number }[] = [];
  /** Acknowledged leaves, and removals by a group's creator (the user removed). */
  readonly leaves: { userId: number; conversationId: number }[] = [];
  readonly deletes: { userId: number; conversationId: number }[] = [];
  /** Acknowledged deletions of messages by their senders: each must be deleted in the database. */
  readonly messageDeletes: MessageDTO[] = [];
  /** Conversations in which someone asked to delete a message: anyone's count there may drop. */
  private readonly messageDeleteAsked = new Set<number>();
  /** Highest seq each user asked to read up to, per conversation. */
  readonly readAsked = new Map<string, number>();
  /**
   * (user, conversation) pairs in which the user tried to send: a send right above the cursor moves it, which
   * clears a mark unread (it reads no message: simulation.ts checks the cursors).
   */
  readonly sendAsked = new Set<string>();
  /**
   * Acknowledged mutes and unmutes asked with no other mute of the pair in flight and none before unanswered or
   * refused (such a one may have committed anyway, perhaps later): `muted` is what was asked, `acknowledged` the
   * state the acknowledgement showed. If it is also the last mute of the pair asked (`lastMuteAsked`), the
   * membership must still hold it.
   */
  readonly mutes: { userId: number; conversationId: number; muted: boolean; acknowledged: boolean; ask: number }[] = [];
  /**
   * Per pair, a lower bound of the membership's muteVersion: how often the mute state an acknowledgement showed
   * differed from the one shown before it (starting unmuted at version 0), counting only acknowledgements of mutes
   * asked after the previous counted one was acknowledged. Such an acknowledgement shows a state at least as new
   * (Redis keeps the highest version, and a rebuild reads the database, which has it), so a different value is a
   * later version.
   */
  readonly muteChanges = new Map<string, number>();
  /** Acknowledged marks with the markVersion their acknowledgement showed (0: not marked any more). */
  readonly marks: { userId: number; conversationId: number; markVersion: number }[] = [];
  private readonly muteAsks = new Map<string, { asked: number; inflight: Set<MuteIssued>; failed: boolean }>();
  private readonly muteSeen = new Map<string, { muted: boolean; at: number }>();
  private clock = 0;
  /** (user, conversation) pairs the user marked unread (or tried to). */
  readonly markAsked = new Set<string>();
  private readonly leaveAsked = new Set<string>();
  private readonly deleteAsked = new Set<number>();
  /**
   * (user, conversation) pairs someone asked to add the user to, with no acknowledgement (yet): the plan counts
   * them in, but until the add is acknowledged the group is not theirs, and their tab may drop it (and what they
   * queued there) as a person's would.
   */
  private readonly addUnsure = new Set<string>();
  /** A data-loss fault ran (FLUSHALL or a Redis restart): a user's Redis state may then be missing. */
  dataLoss = false;
  /** Things a tab saw that must never happen (total ≠ sum, a count dropping without a read, …). */
  readonly violations: string[] = [];

  readIssued(userId: number, conversationId: number, seq: number): void {
    const k = key(userId, conversationId);
    this.readAsked.set(k, Math.max(this.readAsked.get(k) ?? 0, seq));
  }

  readAcknowledged(userId: number, conversationId: number, seq: number): void {
    this.reads.push({ userId, conversationId, seq });
  }

  sendIssued(userId: number, conversationId: number): void {
    this.sendAsked.add(key(userId, conversationId));
  }

  sendAcknowledged(userId: number, message: MessageDTO): void {
    this.messages.set(message.clientMsgId, { userId, message });
  }

  /** A mute or unmute is sent; returns what muteAnswered needs to judge its answer. */
  muteIssued(userId: number, conversationId: number): MuteIssued {
    const k = key(userId, conversationId);
    const asks = this.muteAsks.get(k) ?? { asked: 0, inflight: new Set<MuteIssued>(), failed: false };
    this.muteAsks.set(k, asks);
    const issued = { ask: ++asks.asked, at: ++this.clock, alone: asks.inflight.size === 0, cleanBefore: !asks.failed };
    // Those still in flight overlap this one now: any of them may be answered with the state it commits.
    for (const other of asks.inflight) other.alone = false;
    asks.inflight.add(issued);
    return issued;
  }

  /** The answer to a mute: the acknowledged state, or null when it was refused or not answered. */
  muteAnswered(
    userId: number,
    conversationId: number,
    muted: boolean,
    issued: MuteIssued,
    unread: UnreadUpdate | null,
  ): void {
    const k = key(userId, conversationId);
    const asks = this.muteAsks.get(k)!;
    asks.inflight.delete(issued);
    if (unread === null) {
      asks.failed = true;
      return;
    }
    if (issued.alone && issued.cleanBefore)
      this.mutes.push({ userId, conversationId, muted, acknowledged: unread.muted, ask: issued.ask });
    const seen = this.muteSeen.get(k) ?? { muted: false, at: 0 };
    if (issued.at < seen.at) return;
    if (seen.muted !== unread.muted) this.muteChanges.set(k, (this.muteChanges.get(k) ?? 0) + 1);
    this.muteSeen.set(k, { muted: unread.muted, at: ++this.clock });
  }

  /** Whether `ask` is the last mute of the pair that was asked. */
  lastMuteAsked(userId: number, conversationId: number, ask: number): boolean {
    return this.muteAsks.get(key(userId, conversationId))?.asked === ask;
  }

  markIssued(userId: number, conversationId: number): void {
    this.markAsked.add(key(userId, conversationId));
  }

  markAcknowledged(userId: number, conversationId: number, unread: UnreadUpdate): void {
    this.marks.push({ userId, conversationId, markVersion: unread.markVersion });
  }

  addIssued(userId: number, conversationId: number): void {
    this.addUnsure.add(key(userId, conversationId));
  }

  addAcknowledged(userId: number, conversationId: number): void {
    this.addUnsure.delete(key(userId, conversationId));
  }

  leaveIssued(userId: number, conversationId: number): void {
    this.leaveAsked.add(key(userId, conversationId));
  }

  leaveAcknowledged(userId: number, conversationId: number): void {
    this.leaves.push({ userId, conversationId });
  }

  /** The group's creator asked to remove `userId`: for their tabs and counters, as their own leave. */
  removeIssued(userId: number, conversationId: number): void {
    this.leaveIssued(userId, conversationId);
  }

  removeAcknowledged(userId: number, conversationId: number): void {
    this.leaveAcknowledged(userId, conversationId);
  }

  messageDeleteIssued(conversationId: number): void {
    this.messageDeleteAsked.add(conversationId);
  }

  messageDeleteAcknowledged(message: MessageDTO): void {
    this.messageDeletes.push(message);
  }

  /** Whether the acknowledged message was deleted (acknowledged) already. */
  messageDeleted(messageId: number): boolean {
    return this.messageDeletes.some((m) => m.id === messageId);
  }

  deleteIssued(conversationId: number): void {
    this.deleteAsked.add(conversationId);
  }

  deleteAcknowledged(userId: number, conversationId: number): void {
    this.deletes.push({ userId, conversationId });
  }

  wasDeleted(conversationId: number): boolean {
    return this.deleteAsked.has(conversationId);
  }

  /**
   * A user's count in a conversation can only drop after they read or sent in it (a send clears a mark unread), after
   * someone deleted a message there, or to 0 as it is removed (the server pushes the zeroed count before
   * `conversation:removed`).
   */
  mayDrop(userId: number, conversationId: number, to: number): boolean {
    const k = key(userId, conversationId);
    return (
      this.readAsked.has(k) ||
      this.sendAsked.has(k) ||
      this.messageDeleteAsked.has(conversationId) ||
      (to === 0 && this.mayRemove(userId, conversationId))
    );
  }

  /**
   * A conversation can only leave a user's tabs after they left it, were removed from it or someone deleted it, or
   * while an add of them
   * to it has not been acknowledged (it failed, or its answer was lost: it may not have happened).
   */
  mayRemove(userId: number, conversationId: number): boolean {
    const k = key(userId, conversationId);
    return this.leaveAsked.has(k) || this.deleteAsked.has(conversationId) || this.addUnsure.has(k);
  }

  violation(line: string): void {
    this.violations.push(line);
  }
}
