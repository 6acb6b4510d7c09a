"use client";

import { useState, type FormEvent } from "react";
import { useChatStore } from "@/components/providers/ChatProvider";
import { TallyMark } from "./TallyMark";

export function LoginScreen() {
  const signIn = useChatStore((s) => s.signIn);
  const [name, setName] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(null);
    // No client-side checks: the server's rules and wording are the ones to show.
    const failure = await signIn(name.trim());
    setBusy(false);
    if (failure) setError(failure);
  }

  return (
    <main className="login">
      <form className="login-card" onSubmit={submit} noValidate>
        <div className="login-brand">
          <TallyMark size={40} />
          <h1>Tally</h1>
        </div>
        <p className="login-lead">Chat where the unread count is always right.</p>
        <label htmlFor="login-name">Your name</label>
        <input
          id="login-name"
          data-testid="login-name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          autoComplete="username"
          autoCapitalize="none"
          spellCheck={false}
          placeholder="e.g. ada_l"
          autoFocus
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? "login-error" : undefined}
        />
        {error && (
          <p id="login-error" className="form-error" role="alert" data-testid="login-error">
            {error}
          </p>
        )}
        <button type="submit" className="button primary" data-testid="login-submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
