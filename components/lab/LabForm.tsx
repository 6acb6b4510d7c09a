"use client";

import { useEffect, useRef, type FormEvent } from "react";
import type { LabFaults } from "@/server/contracts";
import type { LabForm as Form } from "./store";
import { STRATEGY_LABELS } from "./colors";
import { FAULT_PRESETS, glossaryMeaning, matchingPreset, runStatusText } from "./explain";
import { useLabStore } from "./LabProvider";
import { NumberFields, type NumberFieldSpec } from "./NumberField";
import { STRATEGY_NAMES } from "./store";

const FIELDS: (NumberFieldSpec & { key: keyof Omit<Form, "faults"> })[] = [
  { key: "operations", label: "Operations per strategy", min: 1, max: 1_000_000, hint: glossaryMeaning("operation") },
  { key: "users", label: "Users", min: 1, max: 10_000, hint: "How many users the operations are spread over." },
  { key: "conversationsPerUser", label: "Conversations per user", min: 1, max: 100 },
  { key: "workers", label: "Concurrent workers", min: 1, max: 64, hint: glossaryMeaning("worker") },
  { key: "sendShare", label: "Share of sends (rest: reads)", min: 0, max: 1, step: 0.05 },
  {
    key: "hotUserShare",
    label: "Share on one hot user",
    min: 0,
    max: 1,
    step: 0.05,
    hint: glossaryMeaning("hot user"),
  },
  { key: "seed", label: "Seed", min: 0, max: 2 ** 31 - 1, hint: glossaryMeaning("seed") },
];

const FAULT_FIELDS: (NumberFieldSpec & { key: keyof Omit<LabFaults, "redisRestart"> })[] = [
  {
    key: "stepFailureRate",
    label: "Second step fails (probability)",
    min: 0,
    max: 0.5,
    step: 0.01,
    hint: "The operation fails right after its first write (WATCH and Lua: before their one write); it is redelivered.",
  },
  {
    key: "stepDelayMs",
    label: "Delay between the steps (ms)",
    min: 0,
    max: 1000,
    hint: "A slow server: a pause between the two steps, which widens the window for races.",
  },
  { key: "stepDelayRate", label: "…on this share of operations", min: 0, max: 1, step: 0.05 },
  {
    key: "workerDeathRate",
    label: "Worker dies holding the lock (probability)",
    min: 0,
    max: 0.1,
    step: 0.001,
    hint: "The worker dies between the steps and releases nothing: the lock stays taken until it expires.",
  },
];

const NO_NOTICES: string[] = [];
const FORM_ID = "lab-run-form";

export function LabForm() {
  const form = useLabStore((s) => s.form);
  const strategies = useLabStore((s) => s.strategies);
  const status = useLabStore((s) => s.status);
  const error = useLabStore((s) => s.error);
  const end = useLabStore((s) => s.result?.end);
  const stopAsked = useLabStore((s) => s.stopAsked);
  // A watched run's notices are its owner's business (the form below is this page's own).
  const notices = useLabStore((s) => (s.watching ? NO_NOTICES : (s.run?.notices ?? NO_NOTICES)));
  const draftKept = useLabStore((s) => s.draft !== null);
  const setForm = useLabStore((s) => s.setForm);
  const setFaults = useLabStore((s) => s.setFaults);
  const toggleStrategy = useLabStore((s) => s.toggleStrategy);
  const start = useLabStore((s) => s.start);
  const stop = useLabStore((s) => s.stop);
  const busy = status === "starting" || status === "running";
  // Someone else's run holds the server's one slot: Run waits (the page hears when the slot is free again).
  const waiting = useLabStore((s) => s.othersRun) && !busy;
  const watching = useLabStore((s) => s.watching);
  const offered = useLabStore((s) => s.offer !== null) && waiting;
  const watchOffered = useLabStore((s) => s.watchOffered);
  const preset = matchingPreset(form.faults);
  const offline = useLabStore((s) => s.connection === "offline");
  const runbar = useRef<HTMLDivElement>(null);

  // The run bar's height, for what must keep clear of it when it sticks to the window's top or bottom: focused
  // fields and the live area scrolled to on Run (lab.css, --lab-runbar-h; it wraps on a phone).
  useEffect(() => {
    const bar = runbar.current;
    const section = bar?.parentElement;
    if (!bar || !section) return;
    const measure = () => section.style.setProperty("--lab-runbar-h", `${bar.offsetHeight}px`);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(bar);
    return () => observer.disconnect();
  }, []);

  const blocked = busy || waiting || strategies.length === 0;
  const runButton = useRef<HTMLButtonElement>(null);
  const stopButton = useRef<HTMLButtonElement>(null);
  const stopFocused = useRef(false);

  // Stop leaves with the run it stopped, and a removed button drops the keyboard's focus to the page: the next Tab
  // went into the charts. Focus that was on Stop goes back to Run (a focusin elsewhere first clears the mark).
  useEffect(() => {
    const mark = (event: FocusEvent) => void (stopFocused.current = event.target === stopButton.current);
    document.addEventListener("focusin", mark);
    return () => document.removeEventListener("focusin", mark);
  }, []);
  useEffect(() => {
    if (busy || !stopFocused.current) return;
    stopFocused.current = false;
    if (!document.activeElement || document.activeElement === document.body) runButton.current?.focus();
  }, [busy]);

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (blocked) return;
    void start();
  }

  return (
    <>
      <form id={FORM_ID} className="lab-form" onSubmit={submit} aria-label="Run parameters">
        {draftKept && (
          <p className="lab-notice" data-testid="lab-draft-kept">
            This run was started in another of your tabs or devices: the form shows its settings; your changes come back
            when it ends.
          </p>
        )}
        <fieldset>
          <legend>Strategies</legend>
          {STRATEGY_NAMES.map((name) => (
            <label key={name} className="lab-check" title={glossaryMeaning(STRATEGY_LABELS[name])}>
              <input
                type="checkbox"
                data-testid={`lab-strategy-${name}`}
                aria-description={glossaryMeaning(STRATEGY_LABELS[name])}
                checked={strategies.includes(name)}
                onChange={() => toggleStrategy(name)}
                disabled={busy}
              />
              {STRATEGY_LABELS[name]}
            </label>
          ))}
        </fieldset>
        <fieldset>
          <legend>Workload</legend>
          <NumberFields fields={FIELDS} values={form} onChange={setForm} disabled={busy} />
        </fieldset>
        <fieldset>
          <legend>Faults</legend>
          <div className="lab-presets" role="group" aria-label="Fault presets">
            {FAULT_PRESETS.map((p) => (
              <button
                key={p.id}
                type="button"
                className="lab-preset"
                data-testid={`lab-preset-${p.id}`}
                aria-pressed={preset === p.id}
                title={p.description}
                aria-description={p.description}
                onClick={() => setFaults(p.faults)}
                disabled={busy}
              >
                {p.label}
              </button>
            ))}
          </div>
          <NumberFields fields={FAULT_FIELDS} values={form.faults} onChange={setFaults} disabled={busy} />
          <label className="lab-check" title="Redis restarts empty halfway through each strategy.">
            <input
              type="checkbox"
              data-testid="lab-redisRestart"
              checked={form.faults.redisRestart}
              onChange={(e) => setFaults({ redisRestart: e.target.checked })}
              disabled={busy}
            />
            Restart Redis halfway
          </label>
        </fieldset>
      </form>
      {/* Outside the form, so that it stays on screen (sticky) over the whole section: the form, then the charts. */}
      <div className="lab-actions lab-sticky-bar lab-runbar" data-testid="lab-actions" ref={runbar}>
        {/* aria-disabled, not disabled: pressed from the keyboard, Run keeps the focus (submit ignores it meanwhile). */}
        <button
          type="submit"
          form={FORM_ID}
          className="button primary"
          data-testid="lab-run"
          ref={runButton}
          aria-disabled={blocked}
          aria-describedby={waiting ? "lab-waiting" : undefined}
        >
          {busy ? "Running…" : "Run"}
        </button>
        {busy && (
          <button type="button" className="button" data-testid="lab-stop" ref={stopButton} onClick={() => void stop()}>
            Stop
          </button>
        )}
        <span className="lab-status" data-testid="lab-status" data-status={status} role="status">
          {offline ? (
            <span className="lab-offline" data-testid="lab-offline">
              Connection lost — reconnecting…{busy && " (the run goes on on the server)"}
            </span>
          ) : waiting ? (
            <span id="lab-waiting" data-testid="lab-waiting">
              Someone else&apos;s run is going on this server (one at a time)
              {status === "watching" ? ", drawn below" : ""}; Run is back when it ends.
            </span>
          ) : watching && status !== "idle" ? (
            `someone else's run ${runStatusText(status, end, stopAsked)}`
          ) : (
            runStatusText(status, end, stopAsked)
          )}
        </span>
        {/* Not taken up by itself: this page shows its own run's results or failure, which the server does not keep. */}
        {offered && !offline && (
          <button type="button" className="button" data-testid="lab-watch" onClick={() => void watchOffered()}>
            Watch it
          </button>
        )}
        {/* In the bar, which stays on screen: below it, the charts scrolled to on Run would hide it. */}
        {error && (
          <p className="form-error lab-runbar-error" role="alert" data-testid="lab-error">
            {error}
          </p>
        )}
      </div>
      {notices.map((n) => (
        <p key={n} className="lab-notice" data-testid="lab-notice">
          {n}
        </p>
      ))}
    </>
  );
}
