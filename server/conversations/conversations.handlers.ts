import type { ConversationDTO, MemberChange, UserDTO } from "../contracts/index.ts";
import { addMembersInput, conversationIdParam, createConversationInput, userIdParam } from "../contracts/inputs.ts";
import { parse } from "../errors.ts";
import type { Limits } from "../limits/limits.ts";
import type { Logger } from "../log.ts";
import type { Notifier } from "../realtime/notifier.ts";
import type { SnapshotService } from "../unread/snapshot.service.ts";
import type { ConversationService } from "./conversations.service.ts";
import type { Removal } from "./removal.ts";

export interface ConversationDeps {
  conversations: ConversationService;
  snapshots: SnapshotService;
  removal: Removal;
  notifier: Notifier;
  limits: Limits;
  log: Logger;
}

export type ConversationActions = ReturnType<typeof conversationActions>;

/** Membership changes as the API offers them: validated, limited, stored, then told to every member's tabs. */
export function conversationActions(deps: ConversationDeps) {
  /**
   * Pushes the conversation as each member now sees it, after the change committed. A failure (Redis away, or the
   * group deleted meanwhile) fails no request: the change is made; the tabs see it with the group's next push about
   * its members, or their next sync (a reconnect, a reload).
   */
  const tell = async (
    event: "conversationCreated" | "conversationUpdated",
    conversationId: number,
    memberIds: number[],
    change?: MemberChange,
  ) => {
    try {
      const described = await deps.snapshots.describeFor(conversationId, memberIds);
      memberIds.forEach((memberId, i) =>
        event === "conversationUpdated"
          ? deps.notifier.conversationUpdated(memberId, described[i]!, change)
          : deps.notifier.conversationCreated(memberId, described[i]!),
      );
    } catch (err) {
      deps.log.warn({ err, conversationId, event }, "telling members of a membership change failed; they sync later");
    }
  };
  /** The conversation for the caller's answer after a committed change; null if it cannot be read (as `tell`). */
  const answer = async (conversationId: number, userId: number): Promise<ConversationDTO | null> => {
    try {
      return await deps.snapshots.describe(conversationId, userId);
    } catch (err) {
      deps.log.warn({ err, conversationId }, "describing a conversation after a membership change failed");
      return null;
    }
  };
  const who = (user: UserDTO) => ({ id: user.id, name: user.name });

  return {
    /** Creates (or finds) a conversation and tells the tabs of every member whose list it joins. */
    async create(user: UserDTO, body: unknown) {
      const input = parse(createConversationInput, body);
      await deps.limits.consume("create", { userId: user.id });
      // Adding people to groups nobody asked to join is the abuse to bound: each member of a new group counts.
      if (input.memberNames.length > 1 || input.title) {
        await deps.limits.consume("groupAdd", { userId: user.id }, input.memberNames.length);
      }
      const { conversationId, shownTo } = await deps.conversations.create(user, input);
      if (shownTo.length > 0) await tell("conversationCreated", conversationId, shownTo);
      // Not an error once it is made: a retry of a failed answer would make a second group.
      return { conversation: await answer(conversationId, user.id) };
    },

    /**
     * Adds people to a group: it joins their lists (nothing in it unread for them), and the members before see the
     * new member list. Each person added counts against the adder's `groupAdd`, as in a new group.
     */
    async addMembers(user: UserDTO, idParam: unknown, body: unknown) {
      const conversationId = parse(conversationIdParam, idParam);
      const input = parse(addMembersInput, body);
      await deps.limits.consume("groupAdd", { userId: user.id }, input.memberNames.length);
      const { added, before, seq } = await deps.conversations.add(user, conversationId, input);
      await tell("conversationCreated", conversationId, added);
      await tell("conversationUpdated", conversationId, before, { by: who(user), added, seq });
      return { conversation: await answer(conversationId, user.id) };
    },

    /** Leaves a group: it leaves the user's counters and tabs; the others see the new member list. */
    async leave(user: UserDTO, idParam: unknown) {
      const conversationId = parse(conversationIdParam, idParam);
      const remaining = await deps.conversations.leave(user, conversationId);
      await deps.removal.deliver(conversationId, [user.id], { reason: "left" });
      // The others' member lists (and an untitled group's title) change; their counts do not.
      await tell("conversationUpdated", conversationId, remaining);
      return {};
    },

    /**
     * The group's owner removes a member: the group leaves their counters and tabs, as at a leave, and the others
     * see the new member list.
     */
    async removeMember(user: UserDTO, idParam: unknown, memberParam: unknown) {
      const conversationId = parse(conversationIdParam, idParam);
      const memberId = parse(userIdParam, memberParam);
      await deps.limits.consume("removeMember", { userId: user.id });
      const remaining = await deps.conversations.removeMember(user, conversationId, memberId);
      await deps.removal.deliver(conversationId, [memberId], { reason: "removed", by: user.id });
      await tell("conversationUpdated", conversationId, remaining, { by: who(user), removed: [memberId] });
      return { conversation: await answer(conversationId, user.id) };
    },

    /** Deletes a conversation for every member. */
    async remove(user: UserDTO, idParam: unknown) {
      const conversationId = parse(conversationIdParam, idParam);
      await deps.limits.consume("remove", { userId: user.id });
      const { memberIds, hiddenFrom } = await deps.conversations.remove(user, conversationId);
      await deps.removal.deliver(conversationId, memberIds, { reason: "deleted", by: user.id }, hiddenFrom);
      return {};
    },
  };
}
