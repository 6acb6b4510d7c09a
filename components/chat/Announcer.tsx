"use client";

import { useEffect, useState } from "react";

const EVENT = "tally:announce";

/**
 * Says `text` to a screen reader, politely: for what a person did that moves no focus and shows only as a small
 * change in a row (muted, unmuted, marked as unread).
 */
export function announce(text: string): void {
  window.dispatchEvent(new CustomEvent<string>(EVENT, { detail: text }));
}

/** The one status region `announce` fills; emptied first, so the same sentence twice is said twice. */
export function Announcer() {
  const [text, setText] = useState("");
  useEffect(() => {
    let frame = 0;
    const onAnnounce = (event: Event) => {
      setText("");
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => setText((event as CustomEvent<string>).detail));
    };
    window.addEventListener(EVENT, onAnnounce);
    return () => {
      window.removeEventListener(EVENT, onAnnounce);
      cancelAnimationFrame(frame);
    };
  }, []);
  return (
    <p className="visually-hidden" role="status" data-testid="announcer">
      {text}
    </p>
  );
}
