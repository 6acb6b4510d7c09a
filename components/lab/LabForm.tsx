"use client";

import type { FormEvent } from "react";
import type { LabForm as Form } from "./store";
import { STRATEGY_LABELS } from "./colors";
import { useLabStore } from "./LabProvider";
import { STRATEGY_NAMES } from "./store";

type NumberField = { key: keyof Omit<Form, "faults">; label: string; min: number; max: number; step?: number };

const FIELDS: NumberField[] = [
  { key: "operations", label: "Operations per strategy", min: 1, max: 1_000_000 },
  { key: "users", label: "Users", min: 1, max: 10_000 },
  { key: "conversationsPerUser", label: "Conversations per user", min: 1, max: 100 },
  { key: "workers", label: "Concurrent workers", min: 1, max: 64 },
  { key: "sendShare", label: "Share of sends (rest: reads)", min: 0, max: 1, step: 0.05 },
  { key: "hotUserShare", label: "Share on one hot user", min: 0, max: 1, step: 0.05 },
  { key: "seed", label: "Seed", min: 0, max: 2 ** 31 - 1 },
];

const NO_NOTICES: string[] = [];

function num(value: string): number {
  const n = Number(value);
  return Number.isFinite(n) ? n : 0;
}

export function LabForm() {
  const form = useLabStore((s) => s.form);
  const strategies = useLabStore((s) => s.strategies);
  const status = useLabStore((s) => s.status);
  const error = useLabStore((s) => s.error);
  const notices = useLabStore((s) => s.run?.notices ?? NO_NOTICES);
  const setForm = useLabStore((s) => s.setForm);
  const setFaults = useLabStore((s) => s.setFaults);
  const toggleStrategy = useLabStore((s) => s.toggleStrategy);
  const start = useLabStore((s) => s.start);
  const stop = useLabStore((s) => s.stop);
  const busy = status === "starting" || status === "running";

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    void start();
  }

  return (
    <form className="lab-form" onSubmit={submit} aria-label="Run parameters">
      <fieldset>
        <legend>Strategies</legend>
        {STRATEGY_NAMES.map((name) => (
          <label key={name} className="lab-check">
            <input
              type="checkbox"
              data-testid={`lab-strategy-${name}`}
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
        {FIELDS.map((f) => (
          <label key={f.key} className="lab-field">
            <span>{f.label}</span>
            <input
              type="number"
              data-testid={`lab-${f.key}`}
              min={f.min}
              max={f.max}
              step={f.step ?? 1}
              value={form[f.key]}
              onChange={(e) => setForm({ [f.key]: num(e.target.value) })}
              disabled={busy}
            />
          </label>
        ))}
      </fieldset>
      <fieldset>
        <legend>Faults</legend>
        <label className="lab-field">
          <span>Second step fails (probability)</span>
          <input
            type="number"
            data-testid="lab-stepFailureRate"
            min={0}
            max={0.5}
            step={0.01}
            value={form.faults.stepFailureRate}
            onChange={(e) => setFaults({ stepFailureRate: num(e.target.value) })}
            disabled={busy}
          />
        </label>
        <label className="lab-field">
          <span>Delay between the steps (ms)</span>
          <input
            type="number"
            data-testid="lab-stepDelayMs"
            min={0}
            max={1000}
            value={form.faults.stepDelayMs}
            onChange={(e) => setFaults({ stepDelayMs: num(e.target.value) })}
            disabled={busy}
          />
        </label>
        <label className="lab-field">
          <span>…on this share of operations</span>
          <input
            type="number"
            data-testid="lab-stepDelayRate"
            min={0}
            max={1}
            step={0.05}
            value={form.faults.stepDelayRate}
            onChange={(e) => setFaults({ stepDelayRate: num(e.target.value) })}
            disabled={busy}
          />
        </label>
        <label className="lab-field">
          <span>Worker dies holding the lock (probability)</span>
          <input
            type="number"
            data-testid="lab-workerDeathRate"
            min={0}
            max={0.1}
            step={0.001}
            value={form.faults.workerDeathRate}
            onChange={(e) => setFaults({ workerDeathRate: num(e.target.value) })}
            disabled={busy}
          />
        </label>
        <label className="lab-check">
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
      <div className="lab-actions">
        <button
          type="submit"
          className="button primary"
          data-testid="lab-run"
          disabled={busy || strategies.length === 0}
        >
          {busy ? "Running…" : "Run"}
        </button>
        {busy && (
          <button type="button" className="button" data-testid="lab-stop" onClick={() => void stop()}>
            Stop
          </button>
        )}
        <span className="lab-status" data-testid="lab-status" data-status={status} role="status">
          {status === "idle" ? "" : status}
        </span>
      </div>
      {error && (
        <p className="form-error" role="alert" data-testid="lab-error">
          {error}
        </p>
      )}
      {notices.map((n) => (
        <p key={n} className="lab-notice" data-testid="lab-notice">
          {n}
        </p>
      ))}
    </form>
  );
}
