import type { AddMembersInput, CreateConversationInput, UserDTO } from "../contracts/index.ts";
import { MAX_GROUP_SIZE } from "../contracts/limits.ts";
import type { Db } from "../db/prisma.ts";
import { isUniqueViolation } from "../db/unique.ts";
import { AppError, noSuchUsers } from "../errors.ts";
import { lockPairs } from "../users/blocks.service.ts";

/** The client inside a transaction. */
type Tx = Parameters<Parameters<Db["$transaction"]>[0]>[0];

export type ConversationService = ReturnType<typeof createConversationService>;

/** Membership changes in the database: creating, adding to, leaving and deleting conversations. */
export function createConversationService({
  db,
  forgetGone,
}: {
  db: Db;
  /**
   * Clears the counters' "gone" marks of the people being added (UnreadService.forgetGone), before the add commits
   * and while it holds the conversation's row, so no message event can reach them first.
   */
  forgetGone?: (userIds: number[], conversationId: number) => Promise<void>;
}) {
  /**
   * One other member and no title: the pair's direct conversation (created once, returned afterwards). More, or a
   * title: a new group.
   * Returns the conversation, its members, and `shownTo`: the members whose lists it joins now, so the caller can
   * tell them. A new group joins every member's list; a new direct conversation only the creator's, since it is
   * hidden from the other member until its first message (`hiddenFrom`), or until they start it too, which shows it
   * to them. The lab's bots see theirs at once.
   */
  async function create(
    creator: UserDTO,
    input: CreateConversationInput,
    /** Only the lab opens conversations with its bots; to everyone else a bot account does not exist. */
    options: { withBots?: boolean } = {},
  ): Promise<{ conversationId: number; memberIds: number[]; shownTo: number[] }> {
    const byKey = namesOf(input.memberNames, creator);
    if (byKey.size === 0)
      throw new AppError("invalid", "Name someone other than yourself to start a conversation with.");
    const users = await usersNamed(byKey, options.withBots === true);
    const memberIds = [creator.id, ...users.map((u) => u.id)];

    // A title asks for a group, even of two (the form says so): a direct conversation has none.
    const other = users.length === 1 && !input.title?.trim() ? users[0]! : null;
    const directKey = other && `${Math.min(creator.id, other.id)}:${Math.max(creator.id, other.id)}`;
    // Under the pairs' locks, a block between the creator and someone named is made before this looks (and is
    // seen) or after this commits (and flags the direct conversation this made; blocks.service.ts).
    const guarded = <T>(body: (tx: Tx) => Promise<T>) =>
      db.$transaction(async (tx) => {
        const ids = users.map((u) => u.id);
        await lockPairs(tx, creator.id, ids, "shared");
        await refuseMissing(tx, creator, byKey, users);
        return body(tx);
      });
    try {
      return await guarded(async (tx) => {
        if (!directKey || !other) {
          const conv = await tx.conversation.create({
            data: {
              kind: "group",
              title: input.title?.trim() || null,
              createdById: creator.id,
              memberships: { create: memberIds.map((userId) => ({ userId })) },
            },
            select: { id: true },
          });
          return { conversationId: conv.id, memberIds, shownTo: memberIds };
        }
        const existing = await tx.conversation.findUnique({ where: { directKey }, select: { id: true } });
        if (existing) return startedToo(tx, existing.id, creator.id, memberIds);
        const conv = await tx.conversation.create({
          data: {
            kind: "direct",
            directKey,
            createdById: creator.id,
            memberships: {
              create: [{ userId: creator.id }, { userId: other.id, hidden: options.withBots !== true }],
            },
          },
          select: { id: true },
        });
        return { conversationId: conv.id, memberIds, shownTo: [creator.id] };
      });
    } catch (err) {
      // Both members created their direct conversation at the same moment: the unique directKey kept one. This
      // transaction is gone with the error, so the other's conversation is returned from a new one.
      if (!directKey || !isUniqueViolation(err)) throw err;
      return guarded(async (tx) => {
        const raced = await tx.conversation.findUniqueOrThrow({ where: { directKey }, select: { id: true } });
        return startedToo(tx, raced.id, creator.id, memberIds);
      });
    }
  }

  /**
   * A name is one account whatever its letter case (as at sign-in): `BOB` is bob, and the user's own name in any
   * case is the user, left out. Each name once, as first given, keyed by its lower case.
   */
  function namesOf(memberNames: readonly string[], user: UserDTO): Map<string, string> {
    const byKey = new Map<string, string>();
    for (const n of memberNames) if (!byKey.has(n.toLowerCase())) byKey.set(n.toLowerCase(), n);
    byKey.delete(user.name.toLowerCase());
    return byKey;
  }

  /** The accounts of the names (`namesOf`), bots only when asked. LOWER("name"), as User_name_lower_key has it. */
  function usersNamed(byKey: Map<string, string>, withBots: boolean): Promise<{ id: number; name: string }[]> {
    return db.$queryRaw<{ id: number; name: string }[]>`
      SELECT "id", "name" FROM "User"
      WHERE LOWER("name") = ANY(${[...byKey.keys()]}::text[]) AND (${withBots} OR NOT "isBot")`;
  }

  /**
   * Adds people to a group, by any of its members. Each joins at the group's lastSeq, read under the conversation's
   * row lock, which every send takes before it reads the members: a send stored before the add does not count for
   * them, one stored after it does. Their read cursor starts there, and so does their floor (`joinedSeq`), which
   * every counter event for them carries from then on (docs/consistency.md, "Joining a group").
   * Refused as a new group would be: names nobody has, and anyone the adder blocked or who blocked them
   * (`refuseMissing`); and someone who left the group (they chose to; and a membership is never created again,
   * which the counters' "gone" marks rely on), or more members than a group can have.
   * Returns the members added (names of members already in are skipped), all the members before the add, and the seq
   * they joined at.
   */
  async function add(
    user: UserDTO,
    conversationId: number,
    input: AddMembersInput,
  ): Promise<{ added: number[]; before: number[]; seq: number }> {
    const byKey = namesOf(input.memberNames, user);
    if (byKey.size === 0) throw new AppError("invalid", "Name someone other than yourself to add.");
    const users = await usersNamed(byKey, false);
    return db.$transaction(async (tx) => {
      // As at a group's creation: a block between the adder and someone named is seen here or flags nothing (it
      // concerns direct conversations only), so the order of the two does not matter beyond this check.
      await lockPairs(
        tx,
        user.id,
        users.map((u) => u.id),
        "shared",
      );
      // The row lock before the members are read: sends wait for this commit, then read the new members.
      const conv = await lockAsMember(tx, conversationId, user.id);
      if (conv.kind !== "group") {
        throw new AppError("invalid", "People can be added to a group only; start a group with them instead.");
      }
      const members = await tx.membership.findMany({ where: { conversationId }, select: { userId: true } });
      const before = members.map((m) => m.userId);
      const inAlready = new Set(before);
      // Those in the group already are left out before the checks: a member who blocked the adder (or whom the
      // adder blocked) is in the list for all to see, and naming them must neither refuse the others nor tell.
      const newcomers = users.filter((u) => !inAlready.has(u.id));
      for (const u of users) if (inAlready.has(u.id)) byKey.delete(u.name.toLowerCase());
      if (byKey.size === 0) throw new AppError("invalid", "Everyone you named is in this group already.");
      await refuseMissing(tx, user, byKey, newcomers);
      const ids = newcomers.map((u) => u.id);
      const named = { conversationId, userId: { in: ids } };
      // A GroupLeave stays with the group; a Departure (the counters' record, a day long) also knows leaves from
      // before GroupLeave existed.
      const gone = await tx.groupLeave.findMany({ where: named, select: { userId: true, removedById: true } });
      const departed = await tx.departure.findMany({ where: named, select: { userId: true } });
      const left = new Set([...gone, ...departed].map((r) => r.userId));
      if (left.size > 0) {
        const removed = newcomers.filter((u) => gone.some((r) => r.userId === u.id && r.removedById !== null));
        const leavers = newcomers.filter((u) => left.has(u.id) && !removed.includes(u));
        const names = (us: UserDTO[]) => us.map((u) => `'${u.name}'`).join(", ");
        const parts = [
          ...(leavers.length > 0 ? [`${names(leavers)} left this group`] : []),
          ...(removed.length > 0
            ? [
                `${names(removed)} ${removed.length === 1 ? "was" : "were"} removed from ${leavers.length ? "it" : "this group"}`,
              ]
            : []),
        ];
        throw new AppError(
          "invalid",
          `${parts.join("; ")}: someone who left a group or was removed from it cannot be added to it again.`,
        );
      }
      const added = ids;
      if (before.length + added.length > MAX_GROUP_SIZE) {
        throw new AppError(
          "invalid",
          `A group can have at most ${MAX_GROUP_SIZE} members; this one has ${before.length}.`,
        );
      }
      // Someone who left the group before GroupLeave existed, a day or more ago (their Departure is gone), is not known
      // as a leaver, but Redis may still hold their "gone" mark, which would make the counters ignore the group for
      // them for good: forgotten first. Redis away fails the add (`unavailable`): nothing is written.
      await forgetGone?.(added, conversationId);
      await tx.membership.createMany({
        data: added.map((userId) => ({ userId, conversationId, lastReadSeq: conv.lastSeq, joinedSeq: conv.lastSeq })),
      });
      await tx.groupJoin.createMany({
        data: added.map((userId) => ({ userId, conversationId, addedById: user.id, seq: conv.lastSeq })),
      });
      return { added, before, seq: conv.lastSeq };
    });
  }

  /**
   * Locks the conversation's row (`FOR UPDATE`) for a membership change by `userId`, who must be a member (not of a
   * direct conversation hidden from them): `forbidden` otherwise, as for one that does not exist. Members only, so
   * nobody else holds up a conversation's sends. The membership is read again after the lock, in a statement of its
   * own: the locking one checked it with a snapshot from before any wait for the row (PostgreSQL re-checks only the
   * row itself after one), so a leave that committed meanwhile would pass it.
   */
  async function lockAsMember(tx: Tx, conversationId: number, userId: number) {
    const [conv] = await tx.$queryRaw<{ kind: string; lastSeq: number; createdById: number | null }[]>`
      SELECT c."kind"::TEXT AS "kind", c."lastSeq", c."createdById" FROM "Conversation" c
      WHERE c."id" = ${conversationId}
        AND EXISTS (SELECT 1 FROM "Membership" mb
                    WHERE mb."conversationId" = c."id" AND mb."userId" = ${userId}
                      AND NOT (mb."hidden" AND c."lastSeq" = 0))
      FOR UPDATE OF c`;
    const notMember = () => new AppError("forbidden", "You are not a member of this conversation.");
    if (!conv) throw notMember();
    const still = await tx.membership.findUnique({
      where: { userId_conversationId: { userId, conversationId } },
      select: { userId: true },
    });
    if (!still) throw notMember();
    return conv;
  }

  /**
   * Refuses names nobody has, and a conversation between the creator and anyone they blocked or who blocked them
   * (docs/security.md, "Blocking"). Whoever blocked the creator is answered in the same words as a name nobody has,
   * so the creator cannot tell the two apart; whom the creator blocked is named, also when they blocked the creator
   * back: were that `not_found`, blocking someone and then naming them would tell whether they had blocked you.
   */
  async function refuseMissing(tx: Tx, creator: UserDTO, byKey: Map<string, string>, users: UserDTO[]) {
    const blocks = await tx.block.findMany({
      where: {
        OR: [
          { blockerId: { in: users.map((u) => u.id) }, blockedId: creator.id },
          { blockerId: creator.id, blockedId: { in: users.map((u) => u.id) } },
        ],
      },
      select: { blockerId: true, blockedId: true },
    });
    const blockedByCreator = new Set(blocks.filter((b) => b.blockerId === creator.id).map((b) => b.blockedId));
    const hiddenFromCreator = new Set(
      blocks.filter((b) => b.blockedId === creator.id && !blockedByCreator.has(b.blockerId)).map((b) => b.blockerId),
    );
    const found = new Set(users.filter((u) => !hiddenFromCreator.has(u.id)).map((u) => u.name.toLowerCase()));
    const missing = [...byKey].filter(([key]) => !found.has(key)).map(([, n]) => n);
    if (missing.length > 0) throw new AppError("not_found", noSuchUsers(missing));
    const namedBlocked = users.filter((u) => blockedByCreator.has(u.id));
    if (namedBlocked.length > 0) {
      const names = namedBlocked.map((u) => `'${u.name}'`).join(", ");
      throw new AppError("forbidden", `You blocked ${names}; unblock them first.`);
    }
  }

  /**
   * A member starts a direct conversation that exists: if it was hidden from them (the other member started it and
   * nobody has written yet), it is not any more, and joins their list.
   */
  async function startedToo(tx: Tx, conversationId: number, userId: number, memberIds: number[]) {
    const shown = await tx.membership.updateMany({
      where: { userId, conversationId, hidden: true },
      data: { hidden: false },
    });
    return { conversationId, memberIds, shownTo: shown.count > 0 ? [userId] : [] };
  }

  /**
   * Leaves a group: the membership goes, with a departure (docs/consistency.md) and an outbox entry that takes
   * the group out of the user's counters. When its owner leaves (the creator, or whoever took their place), the
   * member who has been in it longest takes their place (`heirOf`), so that someone can still remove people and
   * delete the group.
   * Returns the members who remain.
   * A direct conversation cannot be left (it would stay the pair's conversation); delete it instead.
   */
  async function leave(user: UserDTO, conversationId: number): Promise<number[]> {
    return db.$transaction(async (tx) => {
      // The row's lock first (members only), strong enough to hand the group on: a deletion or a removal (which lock
      // the row, then the memberships) then waits for this leave, or this leave for it, never each for the other.
      // The membership is read again below, after any wait.
      const [conv] = await tx.$queryRaw<{ createdById: number | null }[]>`
        SELECT c."createdById" FROM "Conversation" c
        WHERE c."id" = ${conversationId}
          AND EXISTS (SELECT 1 FROM "Membership" mb
                      WHERE mb."conversationId" = c."id" AND mb."userId" = ${user.id}
                        AND NOT (mb."hidden" AND c."lastSeq" = 0))
        FOR NO KEY UPDATE OF c`;
      const membership = await tx.membership.findUnique({
        where: { userId_conversationId: { userId: user.id, conversationId } },
        select: { hidden: true, conversation: { select: { kind: true, lastSeq: true } } },
      });
      // A direct conversation hidden from the user is none of theirs: answered as one that does not exist.
      if (!conv || !membership || (membership.hidden && membership.conversation.lastSeq === 0))
        throw new AppError("forbidden", "You are not a member of this conversation.");
      if (membership.conversation.kind === "direct") {
        throw new AppError("invalid", "A direct conversation cannot be left; delete it instead.");
      }
      await tx.membership.delete({ where: { userId_conversationId: { userId: user.id, conversationId } } });
      await tx.departure.create({ data: { userId: user.id, conversationId } });
      await tx.groupLeave.create({ data: { userId: user.id, conversationId } });
      await tx.outboxEvent.create({ data: { kind: "remove", conversationId, userId: user.id, seq: 0 } });
      if (conv.createdById === user.id) {
        await tx.conversation.update({
          where: { id: conversationId },
          data: { createdById: await heirOf(tx, conversationId) },
        });
      }
      const remaining = await tx.membership.findMany({ where: { conversationId }, select: { userId: true } });
      return remaining.map((m) => m.userId);
    });
  }

  /**
   * Who owns a group after its owner left: the member in it longest (the lowest seq joined at: everyone who started
   * it joined at 0; among equals the oldest account). Null when nobody is left. Call under the row's lock.
   */
  async function heirOf(tx: Tx, conversationId: number): Promise<number | null> {
    const heir = await tx.membership.findFirst({
      where: { conversationId },
      orderBy: [{ joinedSeq: "asc" }, { userId: "asc" }],
      select: { userId: true },
    });
    return heir?.userId ?? null;
  }

  /**
   * The group's owner (its creator, or the heir: `leave`) removes a member: for the counters and the member's tabs it
   * is their leave (the membership goes, with a departure and an outbox entry that takes the group out of their
   * counters), and the group's history says who removed them. Like someone who left, they cannot be added back (`add`).
   * Refused, changing nothing: for a non-member, or a direct conversation hidden from the caller (`forbidden`); for a
   * member other than the owner (`forbidden`); for a direct conversation, or the owner naming themselves
   * (`invalid`: leave it instead); for someone not in the group (`not_found`).
   * Returns the members who remain.
   */
  async function removeMember(user: UserDTO, conversationId: number, memberId: number): Promise<number[]> {
    return db.$transaction(async (tx) => {
      // The row's lock, as an add and a deletion take it: membership changes of one group happen one at a time, and a
      // send that waits on it finds the membership gone (tally_store_messages re-checks the sender's after the lock,
      // migration send_after_removal) and is refused.
      const conv = await lockAsMember(tx, conversationId, user.id);
      if (conv.kind !== "group") {
        throw new AppError("invalid", "Nobody can be removed from a direct conversation; delete it instead.");
      }
      if (conv.createdById !== user.id) {
        throw new AppError("forbidden", "Only the group's owner can remove people from it.");
      }
      if (memberId === user.id) throw new AppError("invalid", "You cannot remove yourself; leave the group instead.");
      const removed = await tx.membership.deleteMany({ where: { userId: memberId, conversationId } });
      if (removed.count === 0) throw new AppError("not_found", "That person is not in this group.");
      await tx.departure.create({ data: { userId: memberId, conversationId } });
      await tx.groupLeave.create({ data: { userId: memberId, conversationId, removedById: user.id } });
      await tx.outboxEvent.create({ data: { kind: "remove", conversationId, userId: memberId, seq: 0 } });
      const remaining = await tx.membership.findMany({ where: { conversationId }, select: { userId: true } });
      return remaining.map((m) => m.userId);
    });
  }

  /**
   * Deletes a conversation for everyone: either member of a direct conversation may, and a group's creator.
   * Returns the former members, whose counters lose it (their outbox entries are written in the same step), and
   * those it was hidden from (a direct conversation without a message: it was never theirs, so they are not told).
   */
  async function remove(user: UserDTO, conversationId: number): Promise<{ memberIds: number[]; hiddenFrom: number[] }> {
    return db.$transaction(async (tx) => {
      // The row's lock before the members are read: an add that committed meanwhile is among them (its newcomer
      // gets a departure and is told), and one that comes after finds the group gone. Members only: nobody else holds
      // up a conversation's sends.
      await tx.$queryRaw`
        SELECT 1 FROM "Conversation" c
        WHERE c."id" = ${conversationId}
          AND EXISTS (SELECT 1 FROM "Membership" mb WHERE mb."conversationId" = c."id" AND mb."userId" = ${user.id})
        FOR UPDATE OF c`;
      const conv = await tx.conversation.findFirst({
        // Not one hidden from the user (`hiddenFrom`): it is no conversation of theirs to delete.
        where: {
          id: conversationId,
          memberships: { some: { userId: user.id } },
          NOT: { lastSeq: 0, memberships: { some: { userId: user.id, hidden: true } } },
        },
        select: {
          kind: true,
          createdById: true,
          lastSeq: true,
          memberships: { select: { userId: true, hidden: true } },
        },
      });
      if (!conv) throw new AppError("forbidden", "You are not a member of this conversation.");
      if (conv.kind === "group" && conv.createdById !== user.id) {
        throw new AppError("forbidden", "Only the group's owner can delete it; you can leave it.");
      }
      const memberIds = conv.memberships.map((m) => m.userId);
      await tx.conversation.delete({ where: { id: conversationId } });
      // skipDuplicates: a member who left while this read the members already has theirs.
      await tx.departure.createMany({
        data: memberIds.map((userId) => ({ userId, conversationId })),
        skipDuplicates: true,
      });
      await tx.outboxEvent.createMany({
        data: memberIds.map((userId) => ({ kind: "remove" as const, conversationId, userId, seq: 0 })),
      });
      const hiddenFrom = conv.lastSeq === 0 ? conv.memberships.filter((m) => m.hidden).map((m) => m.userId) : [];
      return { memberIds, hiddenFrom };
    });
  }

  return { create, add, leave, removeMember, remove };
}
