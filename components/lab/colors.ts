import type { LabStrategyName } from "@/server/contracts";

export const STRATEGY_COLORS: Record<LabStrategyName, string> = {
  naive: "#e5322d",
  lock: "#d97706",
  watch: "#2563eb",
  lua: "#16a34a",
};

export const STRATEGY_LABELS: Record<LabStrategyName, string> = {
  naive: "naive (two writes)",
  lock: "lock (SET NX PX)",
  watch: "WATCH / MULTI",
  lua: "Lua (production)",
};

/** Where space is short (chart legends, the badge view); the glossary explains the long names. */
export const STRATEGY_SHORT_LABELS: Record<LabStrategyName, string> = {
  naive: "naive",
  lock: "lock",
  watch: "WATCH",
  lua: "Lua",
};
