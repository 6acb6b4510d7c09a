import type { LabWorkload } from "../contracts/lab.ts";
import { mix, rng } from "./rng.ts";

/**
 * One unread event for one user: a message `seq` arrived in a conversation (send), the user read the
 * conversation up to `seq` (read), or muted it (mute, `seq` 0; only the story mutes). Conversation ids are per
 * user: every user has 1..conversationsPerUser.
 */
export interface LabOp {
  index: number;
  kind: "send" | "read" | "mute";
  userId: number;
  conversationId: number;
  seq: number;
}

/** What the faults do to one attempt of one operation, drawn from the seed so that a run replays exactly. */
export interface AttemptFaults {
  delayMs: number;
  fail: boolean;
  die: boolean;
}

export const HOT_USER = 1;

/**
 * What the workload generator knows is true, like the database in production: for every (user, conversation)
 * the last message seq and the read cursor. An operation counts as committed when it is issued, as a message is
 * committed to PostgreSQL before Redis hears of it.
 */
export class Truth {
  private readonly lastSeq: Int32Array;
  private readonly readSeq: Int32Array;
  private readonly muted: Uint8Array;

  constructor(
    readonly users: number,
    readonly conversationsPerUser: number,
  ) {
    this.lastSeq = new Int32Array(users * conversationsPerUser);
    this.readSeq = new Int32Array(users * conversationsPerUser);
    this.muted = new Uint8Array(users * conversationsPerUser);
  }

  private at(userId: number, conversationId: number): number {
    if (userId < 1 || userId > this.users || conversationId < 1 || conversationId > this.conversationsPerUser) {
      throw new RangeError(`no user ${userId} / conversation ${conversationId} in this workload`);
    }
    return (userId - 1) * this.conversationsPerUser + (conversationId - 1);
  }

  /** Commits a new message and returns its seq. */
  send(userId: number, conversationId: number): number {
    const i = this.at(userId, conversationId);
    this.lastSeq[i] = (this.lastSeq[i] ?? 0) + 1;
    return this.lastSeq[i] ?? 0;
  }

  /** Commits a read up to the newest message and returns the cursor. */
  read(userId: number, conversationId: number): number {
    const i = this.at(userId, conversationId);
    this.readSeq[i] = this.lastSeq[i] ?? 0;
    return this.readSeq[i] ?? 0;
  }

  /** Commits a mute: the conversation's count stays, and leaves the total. */
  mute(userId: number, conversationId: number): void {
    this.muted[this.at(userId, conversationId)] = 1;
  }

  isMuted(userId: number, conversationId: number): boolean {
    return this.muted[this.at(userId, conversationId)] === 1;
  }

  unread(userId: number, conversationId: number): number {
    const i = this.at(userId, conversationId);
    return Math.max(0, (this.lastSeq[i] ?? 0) - (this.readSeq[i] ?? 0));
  }

  /** The badge: the unread of every conversation not muted (the lab sends no mentions). */
  total(userId: number): number {
    let sum = 0;
    for (let c = 1; c <= this.conversationsPerUser; c++) if (!this.isMuted(userId, c)) sum += this.unread(userId, c);
    return sum;
  }

  /**
   * The membership tuples rebuild.lua takes: (conversation, lastSeq, readSeq, then the mute and mark registers:
   * a mute is version 1, and the lab's users never mark).
   */
  memberships(userId: number): number[] {
    const out: number[] = [];
    for (let c = 1; c <= this.conversationsPerUser; c++) {
      const i = this.at(userId, c);
      const muted = this.muted[i] ?? 0;
      if ((this.lastSeq[i] ?? 0) > 0 || muted)
        out.push(c, this.lastSeq[i] ?? 0, this.readSeq[i] ?? 0, muted, muted, 0, 0, 0);
    }
    return out;
  }
}

/**
 * The seeded operation stream. `next()` hands out operations in one fixed order whichever worker asks, so
 * the same seed gives the same operations (and the same faults per attempt) on every run.
 */
export function createWorkload(w: LabWorkload) {
  const random = rng(mix(w.seed, 0x5eed));
  const truth = new Truth(w.users, w.conversationsPerUser);
  let issued = 0;

  function pickUser(): number {
    if (w.users === 1 || random() < w.hotUserShare) return HOT_USER;
    return 1 + Math.floor(random() * w.users);
  }

  function next(): LabOp | null {
    if (issued >= w.operations) return null;
    const index = issued++;
    const userId = pickUser();
    const conversationId = 1 + Math.floor(random() * w.conversationsPerUser);
    if (random() < w.sendShare) {
      return { index, kind: "send", userId, conversationId, seq: truth.send(userId, conversationId) };
    }
    return { index, kind: "read", userId, conversationId, seq: truth.read(userId, conversationId) };
  }

  /** The faults for one attempt; independent of timing and of which worker runs it. */
  function faultsFor(op: LabOp, attempt: number): AttemptFaults {
    const f = w.faults;
    const draw = rng(mix(w.seed, op.index, attempt, 0xfa17));
    const delay = draw() < f.stepDelayRate ? f.stepDelayMs : 0;
    return { delayMs: delay, fail: draw() < f.stepFailureRate, die: draw() < f.workerDeathRate };
  }

  return {
    truth,
    next,
    faultsFor,
    get issued() {
      return issued;
    },
  };
}

export type Workload = ReturnType<typeof createWorkload>;
