import type { UserDTO, UserLookup } from "../contracts/index.ts";
import { userLookupQuery } from "../contracts/inputs.ts";
import { parse } from "../errors.ts";
import type { Limits } from "../limits/limits.ts";
import type { UserDirectory } from "./users.service.ts";

export type UserActions = ReturnType<typeof userActions>;

/** Looking people up as the API offers it: validated, limited per user. */
export function userActions(deps: { users: UserDirectory; limits: Limits }) {
  return {
    async lookup(user: UserDTO, query: unknown): Promise<UserLookup> {
      const { prefix } = parse(userLookupQuery, query);
      await deps.limits.consume("lookup", { userId: user.id });
      return { names: await deps.users.acquaintances(user, prefix) };
    },
  };
}
