import type { RedisClient } from "../redis/client.ts";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { AppError } from "../errors.ts";
import { limitSubject } from "../redis/keys.ts";

/**
 * Every limit Tally enforces, counted in Redis so that it holds per user (or address, or name) whatever the
 * number of sockets and instances. Fixed windows by rate-limiter-flexible: `points` calls per `durationS`.
 */
export const defaultLimits = {
  /** Messages sent by one user. */
  send: { points: 60, durationS: 3 },
  /**
   * People one user's messages mention (`@all` counts every other member of the group): each is a `Mention` row and,
   * until read, an entry in the member's mention set in Redis. The send limit alone let `@all` in a group of 50
   * put 3.6 million there an hour (docs/security.md, "Mention floods").
   */
  mention: { points: 300, durationS: 600 },
  /** `conversation:read` calls by one user. */
  read: { points: 120, durationS: 10 },
  /** `conversation:mute` and `conversation:markUnread` calls by one user. */
  state: { points: 60, durationS: 10 },
  /**
   * `sync` calls by one user. A sync reads every conversation of the user, so it also costs one more point per
   * SYNC_POINTS_PER conversations: a user in 2000 conversations gets one sync per window, not twenty.
   */
  sync: { points: 20, durationS: 10 },
  /** `conversation:list` calls (the list's next pages, as a tab scrolls down) by one user. */
  list: { points: 60, durationS: 10 },
  /**
   * Rows of history pages (`GET /api/conversations/:id/messages`) by one user, a page charged its `limit`: 20 pages of
   * 50 in 10 s. Unlimited, one user drew 980 pages of 4.8 MB in 25 s and others' sends waited 350 ms (a probe).
   */
  history: { points: 1000, durationS: 10 },
  /** Conversations created by one user. */
  create: { points: 30, durationS: 60 },
  /** Other people one user adds to new groups (each member of a new group counts one). */
  groupAdd: { points: 200, durationS: 3600 },
  /**
   * Conversations deleted by one user. Each deletion leaves every member a departure and a "gone" mark; without
   * it, creating and deleting a direct conversation with someone (bounded by `create` alone) left them 43 200 a day.
   */
  remove: { points: 30, durationS: 3600 },
  /** Messages one user deletes: each tells every member's counters and tabs, as a send does. */
  deleteMessage: { points: 60, durationS: 60 },
  /** Members one user removes from their groups: each leaves the member a departure and a "gone" mark. */
  removeMember: { points: 100, durationS: 3600 },
  /** Blocks and unblocks by one user: each pushes the whole list to every tab of theirs. */
  block: { points: 30, durationS: 60 },
  /**
   * Name look-ups (`GET /api/users?prefix=`) by one user: one per keystroke or so in the "New" form; and reads of
   * their block list (`GET /api/blocks`, one per tab connect).
   */
  lookup: { points: 60, durationS: 10 },
  /** Accounts created from one address. */
  signUp: { points: 20, durationS: 3600 },
  /** Sign-in attempts from one address. */
  signIn: { points: 30, durationS: 60 },
  /** Failed sign-ins for one name from one address; a successful sign-in from there clears it. */
  signInFailures: { points: 10, durationS: 900 },
  /**
   * Socket handshakes from one address refused for want of a valid session (a made-up or ended token): each cost a
   * session look-up. Past this the address's handshakes are refused before any look-up until the window ends.
   */
  handshakeFailures: { points: 60, durationS: 60 },
  /** Lab commands that start work by one user: `lab:start`, `lab:replay` (its own Redis a replay) and `bots:start`. */
  lab: { points: 30, durationS: 60 },
  /**
   * `lab:status` asks by one user: one per connect and per change of the run slot; an answer can carry a whole run's
   * samples so far (a few hundred kB), for a page that watches or draws it from its start.
   */
  labStatus: { points: 30, durationS: 10 },
  /**
   * Seconds one user's lab runs hold the server's one run slot (a run may last 10 minutes): a start costs one, the
   * rest of a run's time is charged when it ends, and a start past it is refused, so nobody keeps others out.
   */
  labRun: { points: 1200, durationS: 3600 },
} satisfies Record<string, LimitRule>;

export type LimitName = keyof typeof defaultLimits;

/** Limits whose calls may cost several points (a group's members, the people mentioned, a page's rows). */
const MULTI_POINT: ReadonlySet<LimitName> = new Set<LimitName>(["groupAdd", "mention", "list", "history"]);

/** See `defaultLimits.sync`. */
export const SYNC_POINTS_PER = 100;

/** The extra points a served sync of `conversations` conversations costs. */
export function syncSurcharge(conversations: number): number {
  return Math.floor(conversations / SYNC_POINTS_PER);
}
export interface LimitRule {
  points: number;
  durationS: number;
}
export type LimitRules = Record<LimitName, LimitRule>;
export type LimitSubject = Parameters<typeof limitSubject>[0];

const WORDS: Record<LimitName, string> = {
  send: "Slow down: too many messages at once.",
  mention: "You have mentioned too many people lately; send it without the @ or try again later.",
  read: "Too many read updates; try again shortly.",
  state: "Too many mute or mark changes; try again shortly.",
  sync: "Too many refreshes; try again shortly.",
  list: "Too many pages of conversations at once; try again shortly.",
  history: "Too many pages of messages at once; try again shortly.",
  create: "Too many new conversations; try again later.",
  groupAdd: "You have added too many people to groups; try again later.",
  remove: "Too many conversations deleted; try again later.",
  removeMember: "You have removed too many people from groups; try again later.",
  deleteMessage: "Too many messages deleted at once; try again shortly.",
  block: "Too many blocks and unblocks; try again shortly.",
  lookup: "Too many name look-ups; try again shortly.",
  signUp: "Too many new accounts from this address; try again later.",
  signIn: "Too many sign-in attempts from this address; try again shortly.",
  signInFailures: "Too many failed sign-ins for this name from this address; try again later.",
  handshakeFailures: "Too many connections without a valid session from this address; try again shortly.",
  lab: "Too many lab runs, replays or bot starts; try again shortly.",
  labStatus: "Too many lab status requests; try again shortly.",
  labRun: "Your lab runs have held the server's run slot for their share of the hour; let others run, try later.",
};

/**
 * What a refusal says: the limit's words, and for a wait of a minute or more when to try again ("try again in 37
 * minutes" rather than "later": a person who was told "later" retried, and was refused again, for up to an hour).
 */
export function refusalWords(name: LimitName, retryAfterMs: number): string {
  const words = WORDS[name];
  if (retryAfterMs < 60_000) return words;
  const when = `try again in ${waitWords(retryAfterMs)}.`;
  const later = /try (?:again )?(?:later|shortly)\.$/;
  return later.test(words) ? words.replace(later, when) : `${words} T${when.slice(1)}`;
}

/**
 * A wait of a minute or more in words, rounded up: "1 minute", "37 minutes"; from 90 minutes, hours and minutes up
 * to the next ten ("2 hours 10 minutes" for 2 h 1 min, "3 hours"), so the words are never short of the wait nor
 * more than ten minutes over it.
 */
export function waitWords(ms: number): string {
  const minutes = Math.ceil(ms / 60_000);
  if (minutes < 90) return minutes === 1 ? "1 minute" : `${minutes} minutes`;
  const tens = Math.ceil(minutes / 10) * 10;
  const [hours, rest] = [Math.floor(tens / 60), tens % 60];
  const h = hours === 1 ? "1 hour" : `${hours} hours`;
  return rest === 0 ? h : `${h} ${rest} minutes`;
}

/** A `rate_limited` refusal of `name` that can be tried again in `retryAfterMs`. */
const refused = (name: LimitName, retryAfterMs: number) =>
  new AppError("rate_limited", refusalWords(name, retryAfterMs), retryAfterMs);

export type Limits = ReturnType<typeof createLimits>;

/**
 * Limits whose points an instance takes from Redis a few at a time (a lease) and hands out from memory until they
 * run out or their window ends: `send`, the one limit on the hot path, then costs one Redis round trip per four
 * messages instead of one per message (docs/benchmarks.md). No subject gets more than its points in a window: every
 * point served was counted in Redis within that window, and a lease ends with the window Redis reported. The price:
 * points leased by one instance and not used there count against the subject's other instances until the window
 * ends (at most three per instance; a user's tabs usually share one instance).
 */
export const LEASED_POINTS: Partial<Record<LimitName, number>> = { send: 4 };

/** Points taken from Redis and not handed out yet, usable until `until` (ms, the clock of createLimits). */
interface Lease {
  left: number;
  until: number;
  /** The request for this lease while it is out: the subject's other calls wait for it instead of leasing too. */
  pending?: Promise<void>;
  /** Why the request failed (a refusal, Redis away): given to the call that asked. */
  error?: unknown;
}

/**
 * Redis-backed limiters. While Redis is unreachable each falls back to a per-instance in-memory limiter of the
 * same rule (the library's insurance limiter), so limits hold per instance instead of failing every request.
 */
export function createLimits({
  redis,
  rules,
  leased = LEASED_POINTS,
  now = Date.now,
}: {
  redis: RedisClient;
  rules: LimitRules;
  /** Points leased at a time per limit (default LEASED_POINTS; {} leases nothing). */
  leased?: Partial<Record<LimitName, number>>;
  /** The clock leases end by (tests move it). */
  now?: () => number;
}) {
  const limiters = new Map<LimitName, RateLimiterRedis>();
  for (const [name, rule] of Object.entries(rules) as [LimitName, LimitRule][]) {
    const options = {
      keyPrefix: `rl:${name}`,
      points: rule.points,
      duration: rule.durationS,
      // Once a subject is over, this instance refuses it from memory until the window ends: a client that keeps
      // calling costs no Redis round trip per refusal. Not for limits charged several points a call: a refused
      // call gives its points back (consume), and the block would still refuse a smaller call that fits.
      inMemoryBlockOnConsumed: MULTI_POINT.has(name) ? 0 : rule.points + 1,
    };
    limiters.set(
      name,
      new RateLimiterRedis({
        ...options,
        // Not rejectIfRedisNotReady: a call made while the client still connects must count in Redis. When
        // Redis is down the client fails the call after its retries and the insurance limiter takes over.
        storeClient: redis,
        insuranceLimiter: new RateLimiterMemory(options),
      }),
    );
  }
  const limiter = (name: LimitName) => limiters.get(name)!;
  const refuse = (name: LimitName, res: RateLimiterRes) => refused(name, Math.max(1, Math.ceil(res.msBeforeNext)));

  const leases = new Map<string, Lease>();
  let sweepAt = 1024;

  /**
   * Asks Redis for up to `size` points of the subject and records the answer on `lease` (its `pending` settles when
   * it is in). Refused, the counter has still moved by `size` (the library's script adds before it compares), so the
   * points that were left before this request are still this instance's to hand out: a subject at 58 of 60 gets 2,
   * not a refusal. A refusal from the library's memory (the subject is over, blocked until the window ends) counts
   * nothing and grants nothing. The lease ends when the window Redis reported does, counted from before the request
   * (so never later than Redis' window).
   */
  async function fillLease(name: LimitName, key: string, id: string, size: number, lease: Lease): Promise<void> {
    const asked = now();
    try {
      let granted = size;
      let msLeft: number;
      try {
        msLeft = (await limiter(name).consume(key, size)).msBeforeNext;
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err;
        const before = err.consumedPoints - size;
        granted = before >= 0 && before < rules[name].points ? rules[name].points - before : 0;
        if (granted <= 0) throw refuse(name, err);
        msLeft = err.msBeforeNext;
      }
      lease.left = granted;
      lease.until = asked + msLeft;
    } catch (err) {
      lease.error = err;
      if (leases.get(id) === lease) leases.delete(id);
    }
    if (leases.size >= sweepAt) {
      const t = now();
      for (const [k, l] of leases) if (!l.pending && l.until <= t) leases.delete(k);
      sweepAt = Math.max(1024, leases.size * 2);
    }
  }

  /**
   * One point from the subject's lease, leasing more when it is spent or its window is over. Calls are served in the
   * order they came: the one that asks for a lease waits on it first, those arriving meanwhile after it, so a client's
   * sends keep their order into the database.
   */
  async function consumeLeased(name: LimitName, key: string, size: number): Promise<void> {
    const id = `${name}:${key}`;
    for (;;) {
      const lease = leases.get(id);
      if (lease?.pending) {
        await lease.pending;
        continue;
      }
      if (lease && lease.left > 0 && lease.until > now()) {
        lease.left--;
        return;
      }
      const asking: Lease = { left: 0, until: Number.POSITIVE_INFINITY };
      leases.set(id, asking);
      asking.pending = fillLease(name, key, id, size, asking).finally(() => (asking.pending = undefined));
      await asking.pending;
      // The refusal (or Redis' error) is this call's; the calls waiting behind it ask again.
      if (asking.error !== undefined) throw asking.error;
      if (asking.left > 0 && asking.until > now()) {
        asking.left--;
        return;
      }
    }
  }

  return {
    rules,
    /**
     * Counts `points` calls against the subject's limit; throws `rate_limited` with a retry hint when over. A refused
     * call of more than one point gives them back (the library counts a refused call too): an `@all` to 50 refused
     * does not also refuse a later mention of one (such limits keep no in-memory block, MULTI_POINT).
     */
    async consume(name: LimitName, subject: LimitSubject, points = 1): Promise<void> {
      const size = leased[name] ?? 1;
      const key = limitSubject(subject);
      if (size > 1 && points === 1) return consumeLeased(name, key, size);
      try {
        await limiter(name).consume(key, points);
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err;
        if (points > 1) await limiter(name).reward(key, points);
        throw refuse(name, err);
      }
    },
    /**
     * Charges `points` more for a call already served (its cost showed only once it ran); the next calls pay
     * for it. Never throws for being over.
     */
    async charge(name: LimitName, subject: LimitSubject, points: number): Promise<void> {
      if (points > 0) await limiter(name).penalty(limitSubject(subject), points);
    },
    /**
     * Gives back a point `consume` took for a call that turned out not to count (not for leased limits), unless the
     * count is at 0 already (cleared or expired meanwhile): the library's reward would take it below 0, a point of
     * credit for the next window.
     */
    async refund(name: LimitName, subject: LimitSubject): Promise<void> {
      const key = limitSubject(subject);
      const res = await limiter(name).get(key);
      if (res && res.consumedPoints > 0) await limiter(name).reward(key, 1);
    },
    /**
     * Refuses the call, without a Redis round trip, when this instance has already seen the subject over its limit
     * in the current window (the library's in-memory block): for a check before work only failures are charged for.
     */
    refuseIfBlocked(name: LimitName, subject: LimitSubject): void {
      const l = limiter(name) as RateLimiterRedis & { getInMemoryBlockMsBeforeExpire(rlKey: string): number };
      const ms = l.getInMemoryBlockMsBeforeExpire(l.getKey(limitSubject(subject)));
      if (ms > 0) throw refused(name, ms);
    },
    /** Forgets the subject's count (a successful sign-in clears its failures). */
    async reset(name: LimitName, subject: LimitSubject): Promise<void> {
      await limiter(name).delete(limitSubject(subject));
    },
  };
}

/**
 * A RATE_LIMITS value that lifts every limit, for processes that load-test or simulate many users from one
 * address (benchmarks, the fault model, end-to-end tests). Never for a deployment.
 */
export const LIFTED_LIMITS = Object.keys(defaultLimits)
  .map((name) => `${name}=1000000/1s`)
  .join(",");
