/**
 * Runs the calls made for each key one at a time, in the order they came, on this instance; a key is forgotten
 * once its last call has settled. A call runs whether the one before it succeeded or failed.
 *
 * Tally uses it where a limit is only as good as the order of its calls: a user's syncs (each charged by a size
 * known only once it is read), a user's socket handshakes (each counted after the one before has joined), and a
 * user's bot starts and stops (each start replaces the bots before it).
 */
export function oneAtATime<K>(): <T>(key: K, run: () => Promise<T>) => Promise<T> {
  const last = new Map<K, Promise<unknown>>();
  return <T>(key: K, run: () => Promise<T>): Promise<T> => {
    const mine = (last.get(key) ?? Promise.resolve()).catch(() => undefined).then(run);
    last.set(key, mine);
    const forget = () => {
      if (last.get(key) === mine) last.delete(key);
    };
    mine.then(forget, forget);
    return mine;
  };
}
