/**
 * The client rule for reading (docs/protocol.md, "The client rule for reading"): a message is read once it has
 * been on screen while the window was visible and focused, and a read is sent for nothing beyond that.
 *
 * One cursor per conversation. The page tells it what is on screen and whether the person is looking; it keeps
 * the highest seq seen that way (`seen`, which never goes down) and sends it, at most once per `debounceMs`
 * (scrolling through a hundred messages sends a handful of reads, not a hundred), and only when it is above
 * `floor()`: what the server already has or was already asked for.
 */
export interface ReadCursorOptions {
  /** Reports arriving within this window after the first one are sent together, as one read; 0 sends at once. */
  debounceMs: number;
  /** The highest seq already read or asked for; nothing at or below it is sent. */
  floor(): number;
  /** Sends a read up to `seq`. */
  send(seq: number): void;
  /** `seen` went up (called at once, not debounced, so that badges count down while the person scrolls). */
  onSeen?(seq: number): void;
}

/** What the person can see at this moment. */
export interface Sight {
  /** The window is visible and has the focus. */
  attending: boolean;
  /** The highest seq on screen (0: nothing). */
  onScreen: number;
}

export interface ReadCursor {
  /** The page's latest measurement; only what is on screen while attending counts. */
  observe(sight: Sight): void;
  /** The highest seq that has been on screen while the person was looking. */
  readonly seen: number;
  /** Sends a read that is waiting for its debounce now (the conversation is being left). */
  flush(): void;
  /**
   * Sends what was seen and is not read yet (above `floor()`), whether or not a read waits: after a read that failed
   * (sent while the connection was down), once it is back.
   */
  resend(): void;
  /** Forgets a waiting read (sign-out, the conversation is gone). */
  cancel(): void;
}

export function createReadCursor(options: ReadCursorOptions, initialSeen = 0): ReadCursor {
  let seen = initialSeen;
  let timer: ReturnType<typeof setTimeout> | null = null;

  function fire(): void {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (seen > options.floor()) options.send(seen);
  }

  return {
    observe({ attending, onScreen }) {
      if (attending && onScreen > seen) {
        seen = onScreen;
        options.onSeen?.(seen);
      }
      // A read that failed lowered the floor again; the next measurement (e.g. looking again) retries it.
      if (!attending || seen <= options.floor() || timer !== null) return;
      if (options.debounceMs <= 0) fire();
      else timer = setTimeout(fire, options.debounceMs);
    },
    get seen() {
      return seen;
    },
    flush() {
      if (timer !== null) fire();
    },
    resend() {
      fire();
    },
    cancel() {
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}
