import type { BlockList, UserDTO, UserLookup } from "../contracts/index.ts";
import { blockInput, userIdParam, userLookupQuery } from "../contracts/inputs.ts";
import { parse } from "../errors.ts";
import type { Limits } from "../limits/limits.ts";
import type { Notifier } from "../realtime/notifier.ts";
import type { BlockChange, BlockService } from "./blocks.service.ts";
import type { UserDirectory } from "./users.service.ts";

export type UserActions = ReturnType<typeof userActions>;

/** Looking people up and blocking them as the API offers it: validated, limited per user, changes pushed. */
export function userActions(deps: {
  users: UserDirectory;
  blocks: BlockService;
  limits: Limits;
  notifier: Pick<Notifier, "blocksChanged">;
}) {
  /** The list after a block or an unblock, to the caller, and to every tab of theirs when it changed. */
  const answer = (user: UserDTO, { list, changed }: BlockChange): BlockList => {
    if (changed) deps.notifier.blocksChanged(user.id, list);
    return list;
  };

  return {
    async lookup(user: UserDTO, query: unknown): Promise<UserLookup> {
      const { prefix } = parse(userLookupQuery, query);
      await deps.limits.consume("lookup", { userId: user.id });
      return { names: await deps.users.acquaintances(user, prefix) };
    },

    /** Read by every tab at each connect: limited as look-ups are (up to 1000 rows each). */
    async blocked(user: UserDTO): Promise<BlockList> {
      await deps.limits.consume("lookup", { userId: user.id });
      return deps.blocks.list(user.id);
    },

    async block(user: UserDTO, body: unknown): Promise<BlockList> {
      const { name } = parse(blockInput, body);
      await deps.limits.consume("block", { userId: user.id });
      return answer(user, await deps.blocks.block(user, name));
    },

    async unblock(user: UserDTO, idParam: unknown): Promise<BlockList> {
      const blockedId = parse(userIdParam, idParam);
      await deps.limits.consume("block", { userId: user.id });
      return answer(user, await deps.blocks.unblock(user, blockedId));
    },
  };
}
