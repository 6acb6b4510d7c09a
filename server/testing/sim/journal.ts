import type { MessageDTO } from "../../contracts/index.ts";

const key = (userId: number, conversationId: number) => `${userId}:${conversationId}`;

/**
 * What the simulated tabs asked the server and what it acknowledged, recorded at the transport (so it sees every
 * command the real store sends, retries included). The round's checks judge the database, Redis and every store
 * against it: an acknowledged message or read must not be lost, and a count may only drop, a conversation only
 * disappear, after something that can cause it was asked for.
 */
export class Journal {
  /** clientMsgId → the acknowledged message and its sender. */
  readonly messages = new Map<string, { userId: number; message: MessageDTO }>();
  /** Acknowledged reads: the cursor must end at least at `seq` (unless the user left or the conversation went). */
  readonly reads: { userId: number; conversationId: number; seq: number }[] = [];
  readonly leaves: { userId: number; conversationId: number }[] = [];
  readonly deletes: { userId: number; conversationId: number }[] = [];
  /** Highest seq each user asked to read up to, per conversation. */
  readonly readAsked = new Map<string, number>();
  /** (user, conversation) pairs in which the user tried to send: sending moves the sender's cursor too. */
  readonly sendAsked = new Set<string>();
  private readonly leaveAsked = new Set<string>();
  private readonly deleteAsked = new Set<number>();
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

  leaveIssued(userId: number, conversationId: number): void {
    this.leaveAsked.add(key(userId, conversationId));
  }

  leaveAcknowledged(userId: number, conversationId: number): void {
    this.leaves.push({ userId, conversationId });
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
   * A user's count in a conversation can only drop after they read or sent in it, or to 0 as it is removed (the
   * server pushes the zeroed count before `conversation:removed`).
   */
  mayDrop(userId: number, conversationId: number, to: number): boolean {
    const k = key(userId, conversationId);
    return this.readAsked.has(k) || this.sendAsked.has(k) || (to === 0 && this.mayRemove(userId, conversationId));
  }

  /** A conversation can only leave a user's tabs after they left it or someone deleted it. */
  mayRemove(userId: number, conversationId: number): boolean {
    return this.leaveAsked.has(key(userId, conversationId)) || this.deleteAsked.has(conversationId);
  }

  violation(line: string): void {
    this.violations.push(line);
  }
}
