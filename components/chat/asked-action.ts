"use client";

import { useState } from "react";
import { announce } from "./Announcer";

/**
 * An action the person is asked to confirm first (`window.confirm`), one at a time: `busy` while it runs (for
 * `aria-disabled`: a disabled button loses the keyboard's focus), `error` the server's refusal to show beside it,
 * and a success said aloud (`done`). `run` resolves true once the action was done.
 */
export function useAskedAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function run(question: string, action: () => Promise<string | null>, done: string): Promise<boolean> {
    if (busy || !window.confirm(question)) return false;
    setBusy(true);
    setError(null);
    const refused = await action();
    setBusy(false);
    if (refused !== null) {
      setError(refused);
      return false;
    }
    announce(done);
    return true;
  }
  return { busy, error, run };
}
