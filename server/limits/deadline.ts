/**
 * `p`, or a rejection ("timeout") once `ms` have passed, whichever comes first. `p` goes on: a rejection it ends
 * with later is handled here, so that a call given up on cannot become an unhandled rejection.
 */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  p.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("timeout")), ms);
    timer.unref();
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}
