import type { LabStrategyName } from "../../contracts/lab.ts";
import { lockStrategy } from "./lock.ts";
import { luaStrategy } from "./lua.ts";
import { naiveStrategy } from "./naive.ts";
import type { Strategy, StrategyContext } from "./types.ts";
import { watchStrategy } from "./watch.ts";

export type * from "./types.ts";

const factories: Record<LabStrategyName, (ctx: StrategyContext) => Strategy> = {
  naive: naiveStrategy,
  lock: lockStrategy,
  watch: watchStrategy,
  lua: luaStrategy,
};

export function createStrategy(name: LabStrategyName, ctx: StrategyContext): Strategy {
  return factories[name](ctx);
}
