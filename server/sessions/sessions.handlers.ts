import { credentialsInput } from "../contracts/inputs.ts";
import { AppError, parse } from "../errors.ts";
import type { Limits } from "../limits/limits.ts";
import type { Notifier } from "../realtime/notifier.ts";
import type { Authenticated, SessionService } from "./sessions.service.ts";

export type SessionActions = ReturnType<typeof sessionActions>;

/** Accounts and sessions as the API offers them: limited per address and per name, revocations pushed. */
export function sessionActions(deps: { sessions: SessionService; limits: Limits; notifier: Notifier }) {
  return {
    async signUp(body: unknown, address: string) {
      const { name, password } = parse(credentialsInput, body);
      await deps.limits.consume("signUp", { address });
      return deps.sessions.signUp(name, password);
    },

    /**
     * Unknown name and wrong password fail alike; failures are limited per name and address (the pattern
     * rate-limiter-flexible documents for a login route), and all attempts per address. Per name alone, anyone
     * could lock a person out with ten wrong passwords a quarter of an hour, from any address (a probe did). An
     * attempt counts as a failure from before its password is checked until it succeeds: guesses sent all at once
     * are counted as they arrive, not only once each has failed (checked first and counted after, 29 of them passed
     * a limit of 10 from one address). A success clears the count; an attempt that ends in another error (the
     * database unreachable) gives its point back.
     */
    async signIn(body: unknown, address: string) {
      const { name, password } = parse(credentialsInput, body);
      await deps.limits.consume("signIn", { address });
      await deps.limits.consume("signInFailures", { name, address });
      try {
        const session = await deps.sessions.signIn(name, password);
        await deps.limits.reset("signInFailures", { name, address });
        return session;
      } catch (err) {
        if (!(err instanceof AppError && err.code === "unauthorized"))
          await deps.limits.refund("signInFailures", { name, address }).catch(() => {});
        throw err;
      }
    },

    /** Ends the presented session; its sockets on every instance hear why and are disconnected. */
    async signOut(session: Authenticated | null) {
      if (!session) return;
      await deps.sessions.revoke(session.sessionId);
      await deps.notifier.sessionsEnded([session.sessionId], "signed_out");
    },

    /** Ends every session of the user. */
    async signOutEverywhere(session: Authenticated) {
      const ended = await deps.sessions.revokeAll(session.user.id);
      await deps.notifier.sessionsEnded(ended, "signed_out_everywhere");
      return { ended: ended.length };
    },
  };
}
