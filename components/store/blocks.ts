import type { StateCreator } from "zustand/vanilla";
import type { UserDTO } from "@/server/contracts";
import type { BlocksSlice, ChatState } from "./types";

/** `blocksVersion` -1: no list yet, so the first one (version 0 for someone who never blocked anyone) is taken. */
export const initialBlocksState = { blocked: [] as UserDTO[], blocksVersion: -1 };

/**
 * The people the user blocked. Every change is pushed whole (`blocks:changed`) to each of the user's tabs, answered
 * whole to the tab that made it, and fetched whole when a tab's socket connects (components/providers/ChatProvider.tsx).
 * Two of them can arrive in either order (a push of another tab's block overtaking the answer to this tab's), so each
 * carries the list's version and an older one than the list held is dropped.
 */
export function createBlocksSlice(): StateCreator<ChatState, [], [], BlocksSlice> {
  return (set, get) => ({
    ...initialBlocksState,
    setBlocked({ blocked, version }, userId) {
      // Asked for someone who has signed out of this tab since (the next person's list must not be theirs).
      if (userId !== undefined && get().user?.id !== userId) return;
      // A list without a version comes from a server of the release before versions (a rolling restart): taken,
      // as every list was then, and the version held stays.
      if (typeof version !== "number") return set({ blocked });
      if (version < get().blocksVersion) return;
      set({ blocked, blocksVersion: version });
    },
    resetBlocked() {
      set({ ...initialBlocksState });
    },
  });
}
