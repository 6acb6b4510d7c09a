import type { StateCreator } from "zustand/vanilla";
import type { ConversationDTO, Result, Snapshot, UnreadState, UnreadUpdate } from "@/server/contracts";
import { fromUnreadEntry } from "@/server/contracts/dto";
import { MAX_LIST_PAGE } from "@/server/contracts/inputs";
import { listCursor, sortConversationIds } from "./conversations";
import { pendingWithin } from "./messages";
import { badgeShare, isBeingRead, NO_ANSWER, OFFLINE, rowAsKnown, shownUnread, type StoreRuntime } from "./runtime";
import type { ChatState, UnreadDetail, UnreadSlice } from "./types";

export type UnreadVerdict = "apply" | "ignore" | "resync";

/**
 * The client half of the unread protocol: versions grow by exactly one per change within an epoch, so the next
 * version is safe to apply, an older one is already reflected, and anything else means something was missed.
 */
export function judgeUpdate(local: { epoch: string | null; version: number }, update: UnreadUpdate): UnreadVerdict {
  if (local.epoch === null || update.epoch !== local.epoch) return "resync";
  if (update.version <= local.version) return "ignore";
  if (update.version === local.version + 1) return "apply";
  return "resync";
}

/** One conversation's part of the totals: what checkUnreadInvariants sums. */
export type UnreadRow = Pick<UnreadState, "unreadCount" | "mentionCount" | "muted">;

/**
 * The two invariants of docs/consistency.md ("Mute, mentions and mark as unread"):
 * totalUnread = Σ (muted ? mentionCount : unreadCount) and totalMentions = Σ mentionCount, plus
 * mentionCount ≤ unreadCount in each row (mentions are among the unread messages). Returns what breaks them, [] when
 * they hold. Pure, so a snapshot, a store state or a test model can be checked alike.
 */
export function checkUnreadInvariants(
  totals: { totalUnread: number; totalMentions: number },
  rows: Iterable<UnreadRow>,
): string[] {
  let unread = 0;
  let mentions = 0;
  const problems: string[] = [];
  for (const row of rows) {
    unread += row.muted ? row.mentionCount : row.unreadCount;
    mentions += row.mentionCount;
    if (row.mentionCount > row.unreadCount) problems.push(`${row.mentionCount} mentions > ${row.unreadCount} unread`);
  }
  if (totals.totalUnread !== unread) problems.push(`totalUnread ${totals.totalUnread} ≠ Σ ${unread}`);
  if (totals.totalMentions !== mentions) problems.push(`totalMentions ${totals.totalMentions} ≠ Σ ${mentions}`);
  return problems;
}

/**
 * Whether `update`, the version after the tab's, keeps totalUnread = Σ (muted ? mentions : unread) and totalMentions =
 * Σ mentions with the tab's rows: a version changes one conversation, so the totals may move by that row's change
 * alone (a row the tab dropped counts nothing). Assumes the tab's own totals add up, as every state it takes must.
 */
export function addsUp(s: ChatState, update: UnreadUpdate, dropped: boolean): boolean {
  const id = update.conversationId;
  const before = { unread: badgeShare(s, id, false), mentions: s.unreadDetails[id]?.mentionCount ?? 0 };
  const after = dropped
    ? { unread: 0, mentions: 0 }
    : { unread: update.muted ? update.mentionCount : update.unreadCount, mentions: update.mentionCount };
  return (
    update.totalUnread === s.totalUnread - before.unread + after.unread &&
    update.totalMentions === s.totalMentions - before.mentions + after.mentions
  );
}

/** Every conversation the store has a count or details for, ascending. */
export function unreadRowIds(s: Pick<ChatState, "unreadCounts" | "unreadDetails">): number[] {
  const ids = new Set([...Object.keys(s.unreadCounts), ...Object.keys(s.unreadDetails)].map(Number));
  return [...ids].sort((a, b) => a - b);
}

/** The store's rows for checkUnreadInvariants: every conversation with a count or details (missing parts are 0). */
export function storeUnreadRows(s: Pick<ChatState, "unreadCounts" | "unreadDetails">): UnreadRow[] {
  return unreadRowIds(s).map((id) => ({
    unreadCount: s.unreadCounts[id] ?? 0,
    mentionCount: s.unreadDetails[id]?.mentionCount ?? 0,
    muted: s.unreadDetails[id]?.muted ?? false,
  }));
}

export function detailOf(state: UnreadState): UnreadDetail {
  return {
    mentionCount: state.mentionCount,
    muted: state.muted,
    markedUnread: state.markedUnread,
    markVersion: state.markVersion,
  };
}

/** A listed conversation's state while it counts nothing. */
const NO_DETAIL: UnreadDetail = { mentionCount: 0, muted: false, markedUnread: false, markVersion: 0 };

export const initialUnreadState = {
  epoch: null,
  version: 0,
  unreadCounts: {},
  unreadDetails: {},
  totalUnread: 0,
  totalMentions: 0,
  syncing: false,
} satisfies Partial<UnreadSlice>;

const MAX_SYNC_RETRY_MS = 15_000;

export function createUnreadSlice(rt: StoreRuntime): StateCreator<ChatState, [], [], UnreadSlice> {
  const sync = rt.sync;

  return (set, get) => {
    function landed(token: number, snapshot: Snapshot): void {
      sync.failures = 0;
      set({ syncing: false });
      const open = get().activeConversationId;
      const wasMarked = open !== null && get().unreadDetails[open]?.markedUnread === true;
      get().applySnapshot(snapshot);
      // A mark made elsewhere while this tab was away, on the conversation open here: held, as one pushed would be.
      if (open !== null && !wasMarked && get().unreadDetails[open]?.markedUnread) rt.markHeld.add(open);

      // Only updates that arrived while the sync was in flight can be newer than the snapshot.
      const buffered = sync.buffer.sort((a, b) => a.version - b.version);
      sync.buffer = [];
      for (const update of buffered) get().applyUnread(update);
      const probes = sync.probes;
      sync.probes = [];
      if (probes.some((p) => judgeUpdate(get(), p) !== "ignore")) get().requestSync();

      let stillMissing = false;
      for (const [id, coveredBy] of sync.wanted) {
        if (get().conversations[id] || token >= coveredBy) sync.wanted.delete(id);
        else stillMissing = true;
      }
      if (stillMissing) get().requestSync();

      // Reads that failed while the connection was down, in the open conversation or one left since: sent now, or
      // this tab would show them read while the server and every other device count them.
      for (const cursor of rt.cursors.values()) cursor.resend();

      const active = get().activeConversationId;
      if (sync.catchUpActive) {
        // Pushes were lost: a message:deleted among them too. The others are checked when shown again.
        for (const [id, list] of Object.entries(get().messages))
          if (list.loaded && Number(id) !== active) rt.recheck.add(Number(id));
      }
      if (active !== null) {
        const list = get().messages[active];
        if (sync.catchUpActive && list?.loaded) void get().catchUp(active, true);
        else get().refreshMessages(active);
        get().readIfActive(active);
      }
      sync.catchUpActive = false;
    }

    function failed(): void {
      set({ syncing: false });
      // Everything buffered so far arrived before the retry is sent, so the retry's snapshot covers it.
      sync.buffer = [];
      sync.probes = [];
      if (!get().connected) return;
      const delay = Math.min(rt.deps.retryDelayMs * 2 ** sync.failures, MAX_SYNC_RETRY_MS);
      sync.failures += 1;
      const generation = rt.generation;
      if (sync.retryTimer) clearTimeout(sync.retryTimer);
      sync.retryTimer = setTimeout(() => {
        sync.retryTimer = null;
        if (generation === rt.generation && !get().syncing) get().requestSync();
      }, delay);
    }

    /**
     * A count the messages this tab knows of do not explain (the badge shows less than the server counts) is
     * normally explained a moment later by the message:new, or settled by the read's acknowledgement; if not, the
     * push was lost and the messages are fetched.
     */
    function watchWhileRead(conversationId: number): void {
      if (rt.unreadWatch.has(conversationId)) return;
      const generation = rt.generation;
      const timer = setTimeout(() => {
        rt.unreadWatch.delete(conversationId);
        const s = get();
        if (generation !== rt.generation || !isBeingRead(s, conversationId)) return;
        if (shownUnread(s, conversationId) === (s.unreadCounts[conversationId] ?? 0)) return;
        void get().catchUp(conversationId);
      }, rt.deps.staleUnreadMs);
      rt.unreadWatch.set(conversationId, timer);
    }

    /**
     * A mute or mark's acknowledgement, as a read's: a change is applied at its version (once: its push may have
     * come first); one that changed nothing carries the current version, which may belong to another
     * conversation's change (applying it would move the totals without that row), so it only tells this tab
     * whether it is behind.
     */
    function acknowledged(update: UnreadUpdate, changed: boolean): void {
      if (changed) get().applyUnread(update);
      else get().probeUnread(update);
    }

    async function command(
      conversationId: number,
      request: () => Promise<Result<{ unread: UnreadUpdate; changed: boolean }>>,
    ): Promise<string | null> {
      get().clearConversationError(conversationId);
      // Refused at once rather than tried: the person hears it where they acted (the row), not later in the pane of
      // a conversation they may not open; nothing is queued, as the server would judge it against a newer state.
      if (!get().connected) return OFFLINE;
      const generation = rt.generation;
      let message: string;
      try {
        const res = await request();
        if (generation !== rt.generation) return null;
        if (res.ok) {
          acknowledged(res.unread, res.changed);
          return null;
        }
        message = res.error.message;
      } catch {
        if (generation !== rt.generation) return null;
        // Unknown outcome: had it been applied, its unread:changed reaches every tab anyway.
        message = NO_ANSWER;
        rt.unreachable.add(conversationId);
      }
      set((s) => ({ conversationErrors: { ...s.conversationErrors, [conversationId]: message } }));
      return message;
    }

    return {
      ...initialUnreadState,

      mute(conversationId, muted) {
        return command(conversationId, () => rt.deps.transport.mute({ conversationId, muted }));
      },

      markUnread(conversationId) {
        // Held only for a mark actually asked for (command refuses one made offline before it asks).
        return command(conversationId, () => {
          if (get().activeConversationId === conversationId) rt.markHeld.add(conversationId);
          return rt.deps.transport.markUnread({ conversationId });
        });
      },

      applyUnread(update) {
        if (get().syncing) {
          sync.buffer.push(update);
          return;
        }
        const verdict = judgeUpdate(get(), update);
        if (verdict === "resync") {
          // The snapshot is read after this update was written, so the update itself need not be kept.
          get().requestSync();
          return;
        }
        if (verdict === "ignore") return;
        const removed = rt.removed.has(update.conversationId);
        if (removed && update.unreadCount > 0) {
          // The server still counts a conversation this tab already dropped (its leave answered before the
          // push); applying the total without the row would break total = Σ rows, so take a snapshot instead.
          get().requestSync();
          return;
        }
        // A mark set elsewhere (another tab, another device) on the conversation open here: this tab does not read it
        // away by showing it; opening it again on purpose does.
        if (
          update.markedUnread &&
          !get().unreadDetails[update.conversationId]?.markedUnread &&
          get().activeConversationId === update.conversationId
        ) {
          rt.markHeld.add(update.conversationId);
        }
        if (!addsUp(get(), update, removed)) {
          // The next version changes one row; totals that this tab's rows with that change do not add up to
          // count something the tab does not show (a conversation it dropped while the server still counts it).
          get().requestSync();
          return;
        }
        set((s) => ({
          version: update.version,
          totalUnread: update.totalUnread,
          totalMentions: update.totalMentions,
          unreadCounts: removed ? s.unreadCounts : { ...s.unreadCounts, [update.conversationId]: update.unreadCount },
          unreadDetails: removed ? s.unreadDetails : { ...s.unreadDetails, [update.conversationId]: detailOf(update) },
        }));
        if (update.unreadCount > 0 && isBeingRead(get(), update.conversationId)) {
          get().readIfActive(update.conversationId);
          watchWhileRead(update.conversationId);
        }
      },

      probeUnread(update) {
        // It reports the state at its version, whose last change may concern another conversation: it can
        // show that this tab is behind, but applying it could set a total without the row that changed.
        if (get().syncing) {
          sync.probes.push(update);
          return;
        }
        if (judgeUpdate(get(), update) !== "ignore") get().requestSync();
      },

      requestSync(force = false) {
        if (get().syncing && !force) return;
        sync.token += 1;
        const token = sync.token;
        const generation = rt.generation;
        const current = () => token === sync.token && generation === rt.generation;
        set({ syncing: true });
        // As deep as the tab lists (up to the most a page holds), so a sync does not take away rows it shows.
        const depth = Math.min(Math.max(rt.deps.listPage, get().conversationOrder.length), MAX_LIST_PAGE);
        rt.deps.transport.sync(depth).then(
          (res) => {
            if (!current()) return;
            if (res.ok) landed(token, res.snapshot);
            else failed();
          },
          () => {
            if (current()) failed();
          },
        );
      },

      handleStale() {
        // Lost pushes may include message:new, so the open conversation is caught up as after a reconnect.
        sync.catchUpActive = true;
        get().requestSync(true);
      },

      applySnapshot(snapshot) {
        // Taken after the removal (older answers are dropped), so the server's word wins.
        for (const fresh of snapshot.conversations) rt.removed.delete(fresh.id);
        for (const [id] of snapshot.unread) rt.removed.delete(id);
        set((s) => {
          const conversations: Record<number, ConversationDTO> = {};
          const unreadCounts: Record<number, number> = {};
          const unreadDetails: Record<number, UnreadDetail> = {};
          const readRequested: Record<number, number> = {};
          // Every conversation's state, listed or not (the rest count nothing): the totals are their sum.
          for (const entry of snapshot.unread) {
            const state = fromUnreadEntry(entry);
            unreadCounts[entry[0]] = state.unreadCount;
            unreadDetails[entry[0]] = detailOf(state);
          }
          // The list's first page (as deep as the tab had it, up to the most a page holds) is the server's word.
          for (const fresh of snapshot.conversations) {
            const known = s.conversations[fresh.id];
            // A push that overtook the snapshot carries the newer last message.
            conversations[fresh.id] =
              known && known.lastSeq > fresh.lastSeq
                ? { ...fresh, lastSeq: known.lastSeq, lastMessage: known.lastMessage }
                : rowAsKnown(rt, fresh);
            readRequested[fresh.id] = fresh.lastReadSeq;
            // The same read as `unread`: a listed row that counts nothing gets its zeros.
            unreadCounts[fresh.id] ??= fresh.unreadCount;
            unreadDetails[fresh.id] ??= detailOf(fresh);
          }
          // Rows older than the page that the tab paged in (or was sent) stay while the user is in them: whatever
          // was missed since (pushes lost) made the conversations it touched newer than all of them, so onto the page.
          const members = new Set(snapshot.conversationIds);
          if (snapshot.more) {
            for (const [key, known] of Object.entries(s.conversations)) {
              const id = Number(key);
              if (conversations[id] || !members.has(id)) continue;
              conversations[id] = known;
              readRequested[id] = known.lastReadSeq;
              // Listed, so it has a count like the page's rows: 0 unless the snapshot counts it.
              unreadCounts[id] ??= 0;
              unreadDetails[id] ??= NO_DETAIL;
            }
          }
          const complete = snapshot.conversationIds.every((id) => conversations[id] !== undefined);
          const pageEnd = snapshot.conversations.at(-1);
          return {
            moreConversations: !complete,
            // Pages go on from the first page's end: rows the tab kept come again and are skipped, and none is missed.
            listEnd: complete || !pageEnd ? null : listCursor(pageEnd),
            // A page on its way continues the list this replaces: it is dropped when it comes.
            loadingConversations: false,
            conversationsError: null,
            epoch: snapshot.epoch,
            version: snapshot.version,
            totalUnread: snapshot.totalUnread,
            totalMentions: snapshot.totalMentions,
            unreadCounts,
            unreadDetails,
            conversations,
            conversationOrder: sortConversationIds(conversations),
            readRequested,
            // Messages queued for a conversation the user is in go out, listed or not (a reload restores the queue
            // before the rows it belongs to are paged in); those for one they left are dropped.
            pending: pendingWithin(s.pending, (id) => members.has(id)),
          };
        });
      },
    };
  };
}
