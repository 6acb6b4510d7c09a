import { rng as mulberry32 } from "../lab/rng.ts";

/** The lab's seeded PRNG with helpers: the same seed replays the same run. */
export function rng(seed: number) {
  const next = mulberry32(seed);
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
    chance: (p: number) => next() < p,
  };
}

/** The seed from TEST_SEED (to replay a failure) or a fresh one. */
export function testSeed(): number {
  const fromEnv = Number(process.env.TEST_SEED);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : Math.floor(Math.random() * 2 ** 31) + 1;
}
