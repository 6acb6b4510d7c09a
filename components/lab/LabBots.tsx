"use client";

import { useLabStore } from "./LabProvider";

/** Demo traffic: the other demo users chat in the seeded conversations, so badges move on stage. */
export function LabBots() {
  const bots = useLabStore((s) => s.bots);
  const rate = useLabStore((s) => s.botsRate);
  const error = useLabStore((s) => s.botsError);
  const setBotsRate = useLabStore((s) => s.setBotsRate);
  const startBots = useLabStore((s) => s.startBots);
  const stopBots = useLabStore((s) => s.stopBots);
  return (
    <section className="lab-section" aria-labelledby="lab-bots-title">
      <h2 id="lab-bots-title">Traffic generator</h2>
      <p className="lab-lead">
        Bots sign in as the other demo users and chat in the seeded conversations through the normal sockets. Open the
        chat in another tab to watch the badges move.
      </p>
      <div className="lab-actions">
        <label className="lab-field inline">
          <span>Messages/s</span>
          <input
            type="number"
            data-testid="lab-bots-rate"
            min={0.1}
            max={20}
            step={0.5}
            value={rate}
            onChange={(e) => setBotsRate(Number(e.target.value) || 0)}
          />
        </label>
        <button type="button" className="button primary" data-testid="lab-bots-start" onClick={() => void startBots()}>
          {bots.running ? "Restart bots" : "Start bots"}
        </button>
        <button
          type="button"
          className="button"
          data-testid="lab-bots-stop"
          onClick={() => void stopBots()}
          disabled={!bots.running}
        >
          Stop
        </button>
        <span className="lab-status" data-testid="lab-bots-status" data-running={bots.running}>
          {bots.running
            ? `${bots.users.join(", ")}: ${bots.sent} sent, ${bots.reads} reads${bots.errors ? `, ${bots.errors} errors` : ""}`
            : "stopped"}
        </span>
      </div>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
