import type { SessionEndReason } from "@/server/contracts";

/** What a signed-out page says when the server said why its session ended (docs/protocol.md, "Why a session ended"). */
const ENDED_BECAUSE: Record<SessionEndReason, string> = {
  signed_out: "You signed out in another tab.",
  signed_out_everywhere: "You signed out everywhere from another device or tab.",
  expired: "Your session expired; sign in again.",
};

/** When it did not say (the session ended while the page had no connection). */
const ENDED_SOMEHOW = "You were signed out: your session was ended on another device or in another tab, or it expired.";

/** A reason as received from the server, if this client knows it; any other reads as none. */
export function knownEndReason(reason: unknown): SessionEndReason | null {
  return typeof reason === "string" && Object.hasOwn(ENDED_BECAUSE, reason) ? (reason as SessionEndReason) : null;
}

export function sessionEndedText(reason: SessionEndReason | null): string {
  return reason ? ENDED_BECAUSE[reason] : ENDED_SOMEHOW;
}
