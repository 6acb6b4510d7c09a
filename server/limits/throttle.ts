/**
 * Calls `run` at once, then at most once every `everyMs`: calls that come in between are folded into one, made when
 * the interval ends. Nothing is dropped for good: the last call of a burst is always followed by a run.
 *
 * Hand-written (a dozen lines) rather than a dependency: Tally needs only this one shape, and `cancel` for a
 * clean shutdown.
 */
export function throttle(run: () => void, everyMs: number): { (): void; cancel(): void } {
  let timer: NodeJS.Timeout | null = null;
  let pending = false;
  const fire = () => {
    pending = false;
    run();
    timer = setTimeout(() => {
      timer = null;
      if (pending) fire();
    }, everyMs);
    timer.unref?.();
  };
  const call = () => {
    if (timer === null) fire();
    else pending = true;
  };
  call.cancel = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    pending = false;
  };
  return call;
}
