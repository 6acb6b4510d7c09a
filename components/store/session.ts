import type { StateCreator } from "zustand/vanilla";
import type { SessionEndReason } from "@/server/contracts";
import { knownEndReason } from "@/components/lib/session-ended";
import { initialBlocksState } from "./blocks";
import { initialConversationsState } from "./conversations";
import { clearDrafts } from "./drafts";
import { clearOutbox, type StoreRuntime } from "./runtime";
import type { ChatState, SessionSlice } from "./types";
import { initialUnreadState } from "./unread";

export function createSessionSlice(rt: StoreRuntime): StateCreator<ChatState, [], [], SessionSlice> {
  return (set, get) => {
    /** This tab's own sign-out is on its way: the session it ends is not "ended elsewhere". */
    let signingOut = false;
    /** What the server said just before it dropped this tab's socket (`session:ended`), until verifySession. */
    let heard: { reason: SessionEndReason | null } | null = null;

    /** Forgets everything of the signed-in user; window state (visible, focused) is not theirs. */
    function reset(sessionEnded = false, sessionEndReason: SessionEndReason | null = null): void {
      heard = null;
      rt.generation += 1;
      rt.sync.token += 1;
      rt.sync.buffer = [];
      rt.sync.wanted.clear();
      rt.sync.failures = 0;
      rt.sync.catchUpActive = false;
      if (rt.sync.retryTimer) clearTimeout(rt.sync.retryTimer);
      rt.sync.retryTimer = null;
      for (const timer of rt.unreadWatch.values()) clearTimeout(timer);
      rt.unreadWatch.clear();
      rt.deletedIds.clear();
      rt.recheck.clear();
      rt.removed.clear();
      rt.unreachable.clear();
      clearOutbox(rt.outbox);
      for (const cursor of rt.cursors.values()) cursor.cancel();
      rt.cursors.clear();
      rt.markClears.clear();
      rt.markHeld.clear();
      rt.view = null;
      set({
        ...initialUnreadState,
        ...initialConversationsState,
        ...initialBlocksState,
        messages: {},
        left: {},
        added: {},
        pending: {},
        conversationErrors: {},
        user: null,
        sessionStatus: "signedOut",
        sessionEnded,
        sessionEndReason: sessionEnded ? sessionEndReason : null,
        connected: false,
      });
    }

    return {
      user: null,
      sessionStatus: "loading",
      connected: false,
      lab: false,
      sessionEnded: false,
      sessionEndReason: null,

      async restoreSession() {
        const res = await rt.deps.session.current();
        if (res.ok) set({ lab: res.lab });
        if (get().sessionStatus !== "loading") return;
        if (res.ok && res.user) {
          set({ user: res.user, sessionStatus: "signedIn" });
          get().restoreQueue();
        } else set({ sessionStatus: "signedOut" });
      },

      async signIn(credentials, create = false) {
        const res = await (create ? rt.deps.session.signUp(credentials) : rt.deps.session.signIn(credentials));
        if (!res.ok) return res.error;
        heard = null;
        set({ user: res.user, sessionStatus: "signedIn", sessionEnded: false, sessionEndReason: null });
        get().restoreQueue();
        return null;
      },

      async signOut(everywhere = false) {
        const userId = get().user?.id;
        signingOut = true;
        // Clear the cookie before showing the sign-in form, so a quick new sign-in cannot be undone by it.
        try {
          await (everywhere ? rt.deps.session.signOutEverywhere() : rt.deps.session.signOut());
        } finally {
          signingOut = false;
        }
        // Signing out means leaving this browser to someone else: no half-written text stays behind. (An expired
        // session, below in verifySession, keeps them for the same person's next sign-in.)
        if (userId !== undefined) clearDrafts(rt.deps.drafts, userId);
        // Messages the person already sent are not drafts: their saved queue stays in this tab (sessionStorage, gone
        // with the tab) and goes out at the same user's next sign-in here. A user who signs in next sees none of it.
        reset();
      },

      handleConnected() {
        // Loads that failed while the connection was down are not errors to show now: the open conversation loads
        // again once the sync lands, and an older page when the list is scrolled to its top (MessageList).
        // Nor are actions refused only because the server was out of reach: the sync shows what did happen.
        set((s) => {
          const messages = { ...s.messages };
          for (const [id, list] of Object.entries(s.messages)) {
            if (list.offline) messages[Number(id)] = { ...list, error: null, offline: false };
          }
          const conversationErrors = { ...s.conversationErrors };
          for (const id of rt.unreachable) delete conversationErrors[id];
          rt.unreachable.clear();
          return { connected: true, messages, conversationErrors };
        });
        rt.sync.catchUpActive = true;
        get().requestSync(true);
        get().resumeSending();
      },

      handleDisconnected() {
        set({ connected: false });
      },

      async verifySession() {
        const res = await rt.deps.session.current();
        // Only a server that answers "no session" signs this tab out; an unreachable one proves nothing. A session
        // of someone else (another tab signed another person in while this one was offline and missed the end of
        // its own) is no session of this tab's: it must not read, send or count for a person it does not show.
        const me = get().user?.id;
        const signedOut = res.ok
          ? res.user === null || (me !== undefined && res.user.id !== me)
          : res.error.code === "unauthorized";
        // What the server said of the socket's session no longer tells anything once the cookie holds another one.
        const said = heard;
        if (res.ok) heard = null;
        if (!signedOut) return true;
        // Ended while this tab was signed in, and not by this tab's own sign-out (whose socket can drop before the
        // sign-out is answered): the sign-in form then says why, in general unless the server said.
        if (get().sessionStatus === "signedIn") reset(!signingOut, said?.reason ?? null);
        return false;
      },

      handleSessionEnded(reason) {
        // This tab's own sign-out ends its session too; and a tab already signed out has nothing to explain.
        if (signingOut || get().sessionStatus !== "signedIn") return;
        heard = { reason: knownEndReason(reason) };
      },
    };
  };
}
