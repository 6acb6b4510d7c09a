import type { LabBadge, LabDrift } from "../contracts/lab.ts";
import { shownSum, type UserState } from "./strategies/types.ts";
import type { Truth } from "./workload.ts";

/** Users whose total differs from the sum of their (unmuted) conversation counts, and by how much in all. */
export function driftOf(states: Iterable<UserState>): LabDrift {
  let users = 0;
  let amount = 0;
  for (const s of states) {
    const sum = shownSum(s);
    if (sum !== s.total) {
      users++;
      amount += Math.abs(s.total - sum);
    }
  }
  return { users, amount };
}

/** Each user's badge and the sum of their conversations; `states[i]` belongs to `userIds[i]` (missing: 0). */
export function badgesOf(userIds: number[], states: readonly (UserState | undefined)[]): LabBadge[] {
  return userIds.map((userId, i) => {
    const state = states[i];
    return { userId, badge: state?.total ?? 0, sum: state ? shownSum(state) : 0 };
  });
}

/** Conversation counts and totals that differ from the truth; `states[i]` belongs to `userIds[i]`. */
export function wrongOf(userIds: number[], states: UserState[], truth: Truth): { counts: number; totals: number } {
  let counts = 0;
  let totals = 0;
  userIds.forEach((userId, i) => {
    const state = states[i];
    if (!state) return;
    for (let c = 1; c <= truth.conversationsPerUser; c++) {
      if ((state.counts.get(c) ?? 0) !== truth.unread(userId, c)) counts++;
    }
    if (state.total !== truth.total(userId)) totals++;
  });
  return { counts, totals };
}

/** The p-th percentile (0–100) of ascending values, nearest rank; 0 for none. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? 0;
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
