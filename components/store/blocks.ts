import type { StateCreator } from "zustand/vanilla";
import type { UserDTO } from "@/server/contracts";
import type { BlocksSlice, ChatState } from "./types";

export const initialBlocksState = { blocked: [] as UserDTO[] };

/**
 * The people the user blocked. Every change is pushed whole (`blocks:changed`) to each of the user's tabs and a
 * tab fetches it whole when its socket connects (components/providers/ChatProvider.tsx), so the last list wins.
 */
export function createBlocksSlice(): StateCreator<ChatState, [], [], BlocksSlice> {
  return (set) => ({
    ...initialBlocksState,
    setBlocked(blocked) {
      set({ blocked });
    },
  });
}
