/**
 * The columns a story's step changed, by index: those whose shown steps (or verdict) differ between the two
 * cursors. A column shows its first min(length, step) steps, and its verdict from its last one on.
 */
export function changedColumns(lengths: readonly number[], from: number, to: number): number[] {
  return lengths.flatMap((length, i) => (Math.min(length, from) !== Math.min(length, to) ? [i] : []));
}
