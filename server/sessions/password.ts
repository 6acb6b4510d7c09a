import { hash, verify } from "@node-rs/argon2";

/**
 * Passwords are stored as argon2id PHC strings (`$argon2id$v=19$m=19456,t=2,p=1$…`) by @node-rs/argon2: the
 * first choice of OWASP's password storage guidance, memory-hard, with these exact parameters as its
 * recommended minimum, and a prebuilt binary in the npm package (no build step). scrypt from node:crypto at the
 * equivalent OWASP setting (N=2^17) costs ~400 ms of CPU a hash on this 2-core machine against ~15 ms here,
 * which makes a sign-in flood a CPU flood. The parameters live in each hash, so raising them later only
 * affects new hashes.
 */
const OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

/** Never throws: a malformed stored hash is a mismatch. */
export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}

let dummy: Promise<string> | undefined;

/**
 * Spends the time of one verification against a hash nobody's password matches, so that an unknown name
 * answers as slowly as a wrong password (no user enumeration by timing).
 */
export async function burnVerification(password: string): Promise<void> {
  dummy ??= hashPassword("tally-dummy-password-never-matches");
  await verifyPassword(await dummy, password);
}
