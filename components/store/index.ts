import { createStore } from "zustand/vanilla";
import { createBlocksSlice } from "./blocks";
import { createConversationsSlice } from "./conversations";
import { createMessagesSlice } from "./messages";
import { createRuntime } from "./runtime";
import { createSessionSlice } from "./session";
import type { ChatState, ChatStoreDeps } from "./types";
import { createUnreadSlice } from "./unread";

export type * from "./types";

/** One store per provider (never a module singleton), so server renders and tests never share state. */
export function createChatStore(deps: ChatStoreDeps) {
  const rt = createRuntime(deps);
  return createStore<ChatState>()((...a) => ({
    ...createSessionSlice(rt)(...a),
    ...createConversationsSlice(rt)(...a),
    ...createMessagesSlice(rt)(...a),
    ...createUnreadSlice(rt)(...a),
    ...createBlocksSlice()(...a),
  }));
}

export type ChatStore = ReturnType<typeof createChatStore>;
