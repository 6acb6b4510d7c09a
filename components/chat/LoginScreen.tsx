"use client";

import { useEffect, useState, type FormEvent } from "react";
import type { DemoAccounts } from "@/server/contracts";
import { api } from "@/components/lib/api";
import { sessionEndedText } from "@/components/lib/session-ended";
import { returnPath } from "@/components/lib/return-path";
import { useChatStore } from "@/components/providers/ChatProvider";
import { TextField, useServerCall } from "./form";
import { fieldsAtFault, NONE_AT_FAULT } from "./login-errors";
import { TallyMark } from "./TallyMark";

type Mode = "signIn" | "signUp";

export function LoginScreen() {
  const signIn = useChatStore((s) => s.signIn);
  const sessionEnded = useChatStore((s) => s.sessionEnded);
  const sessionEndReason = useChatStore((s) => s.sessionEndReason);
  const [mode, setMode] = useState<Mode>("signIn");
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const { busy, error, setError, call } = useServerCall();
  /** Which fields the error is about: marked invalid, the error read on them (the others only hear it once). */
  const [atFault, setAtFault] = useState(NONE_AT_FAULT);
  const [demo, setDemo] = useState<DemoAccounts | null>(null);

  useEffect(() => {
    let live = true;
    void api.getDemoAccounts().then((res) => {
      if (live && res.ok && res.accounts.length > 0) setDemo({ accounts: res.accounts, password: res.password });
    });
    return () => {
      live = false;
    };
  }, []);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    // No client-side checks: the server's rules and wording are the ones to show.
    const signedIn = await call(async () => {
      const failure = await signIn({ name: name.trim(), password }, mode === "signUp");
      setAtFault(failure ? fieldsAtFault(failure) : NONE_AT_FAULT);
      return failure?.message ?? null;
    });
    // Came from a page that needs a session (/lab → "/?next=/lab"): go back there.
    const back = returnPath(new URLSearchParams(window.location.search).get("next"), window.location.origin);
    if (signedIn && back) window.location.assign(back);
  }

  function switchMode(next: Mode) {
    setMode(next);
    setError(null);
  }

  function fillDemo(account: string) {
    if (!demo?.password) return;
    setMode("signIn");
    setName(account);
    setPassword(demo.password);
    setError(null);
  }

  const creating = mode === "signUp";
  return (
    <main className="login">
      <form className="login-card" onSubmit={submit} noValidate aria-labelledby="login-title">
        <div className="login-brand">
          <TallyMark size={40} />
          <h1>Tally</h1>
        </div>
        <p className="login-lead">Chat where the unread count is always right.</p>
        {sessionEnded && (
          <p className="login-ended" role="status" data-testid="session-ended">
            {sessionEndedText(sessionEndReason)}
          </p>
        )}
        {/*
          Tabs as the ARIA pattern has them: one stop for Tab (the selected one); the arrows, Home and End move between
          them and select at once.
        */}
        <div
          className="login-tabs"
          role="tablist"
          aria-label="Sign in or create an account"
          onKeyDown={(event) => {
            // Two tabs: either arrow goes to the other one (wrapping round), Home to the first, End to the last.
            const other = creating ? "signIn" : "signUp";
            const next =
              event.key === "ArrowLeft" || event.key === "ArrowRight"
                ? other
                : event.key === "Home"
                  ? "signIn"
                  : event.key === "End"
                    ? "signUp"
                    : null;
            if (next === null) return;
            event.preventDefault();
            switchMode(next);
            event.currentTarget.querySelector<HTMLElement>(`[data-mode="${next}"]`)?.focus();
          }}
        >
          <button
            type="button"
            role="tab"
            aria-selected={!creating}
            tabIndex={creating ? -1 : 0}
            className={!creating ? "active" : undefined}
            data-testid="login-mode-sign-in"
            data-mode="signIn"
            onClick={() => switchMode("signIn")}
          >
            Sign in
          </button>
          <button
            type="button"
            role="tab"
            aria-selected={creating}
            tabIndex={creating ? 0 : -1}
            className={creating ? "active" : undefined}
            data-testid="login-mode-sign-up"
            data-mode="signUp"
            onClick={() => switchMode("signUp")}
          >
            Create account
          </button>
        </div>
        <h2 id="login-title" className="visually-hidden">
          {creating ? "Create an account" : "Sign in"}
        </h2>
        <TextField
          id="login-name"
          label="Name"
          value={name}
          onValue={setName}
          autoComplete="username"
          autoCapitalize="none"
          spellCheck={false}
          placeholder="e.g. ada_l"
          autoFocus
          aria-invalid={error && atFault.name ? true : undefined}
          aria-describedby={describedBy(creating && "login-name-hint", error && atFault.name && "login-error")}
        />
        {creating && (
          <p id="login-name-hint" className="login-hint">
            1–32 characters: a–z, A–Z, 0–9, _ or - (no spaces or accents).
          </p>
        )}
        <TextField
          id="login-password"
          label="Password"
          type="password"
          value={password}
          onValue={setPassword}
          autoComplete={creating ? "new-password" : "current-password"}
          aria-invalid={error && atFault.password ? true : undefined}
          aria-describedby={describedBy(creating && "login-password-hint", error && atFault.password && "login-error")}
        />
        {creating && (
          <p id="login-password-hint" className="login-hint">
            At least 8 characters.
          </p>
        )}
        {error && (
          <p id="login-error" className="form-error" role="alert" data-testid="login-error">
            {error}
          </p>
        )}
        {/* Not `disabled` while busy: a disabled button loses the keyboard's focus (a second submit is ignored). */}
        <button type="submit" className="button primary" data-testid="login-submit" aria-disabled={busy}>
          {busy ? (creating ? "Creating…" : "Signing in…") : creating ? "Create account" : "Sign in"}
        </button>
        {demo && (
          <aside className="login-demo" data-testid="demo-accounts" aria-label="Demo accounts">
            <p>
              <strong>Demo accounts</strong> for trying Tally out, not for real use. Password for all:{" "}
              <code data-testid="demo-password">{demo.password}</code>
            </p>
            <div className="login-demo-names">
              {demo.accounts.map((account) => (
                <button
                  key={account}
                  type="button"
                  className="chip"
                  data-testid={`demo-account-${account}`}
                  onClick={() => fillDemo(account)}
                >
                  {account}
                </button>
              ))}
            </div>
          </aside>
        )}
      </form>
    </main>
  );
}

/** A field's description: its hint and the form's error when the error is about it. */
function describedBy(...ids: (string | false | null)[]): string | undefined {
  return ids.filter(Boolean).join(" ") || undefined;
}
