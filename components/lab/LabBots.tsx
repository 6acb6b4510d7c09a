"use client";

import { useLabStore } from "./LabProvider";
import { NumberField } from "./NumberField";

/** Demo traffic: bot accounts of the signed-in user chat with them, so badges move on stage. */
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
        Your own bot accounts (bot-…, marked as bots) chat with you in direct conversations through the normal sockets.
        Only you can stop them. Open the chat in another tab to watch your badges move.
      </p>
      <div className="lab-actions">
        <NumberField
          className="lab-field inline"
          label="Messages/s"
          testId="lab-bots-rate"
          min={0.1}
          max={20}
          step={0.5}
          value={rate}
          onValue={setBotsRate}
        />
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
