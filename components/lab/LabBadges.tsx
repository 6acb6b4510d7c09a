"use client";

import { STRATEGY_COLORS, STRATEGY_SHORT_LABELS } from "./colors";
import { useLabStore } from "./LabProvider";
import { latestBadges } from "./store";

/**
 * A few users' badges as each strategy holds them right now, next to the sum of their conversations: drift as
 * a presenter's audience knows it, a badge that says 5 over a list that adds up to 3.
 */
export function LabBadges() {
  const samples = useLabStore((s) => s.samples);
  const strategies = useLabStore((s) => s.run?.strategies ?? s.strategies);
  const rows = latestBadges(samples, strategies);
  // A stopped run's strategies without a sample never started: they will not run, not "not yet".
  const stopped = useLabStore((s) => s.status === "stopped");
  const users = rows.find((r) => r.badges.length > 0)?.badges.map((b) => b.userId) ?? [1, 2, 3];
  return (
    <figure className="lab-badges" data-testid="lab-badges">
      <figcaption>Live badges</figcaption>
      <p className="lab-hint">
        Each user&apos;s badge as the strategy stores it, over Σ, the sum of their conversations. Red: they disagree.
      </p>
      <table className="lab-badge-table">
        <thead>
          <tr>
            <th scope="col">strategy</th>
            {users.map((id) => (
              <th key={id} scope="col" title={id === 1 ? "User 1 gets the hot user's share of all operations." : ""}>
                {id === 1 ? "hot user" : `user ${id}`}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map(({ strategy, badges }) => (
            <tr
              key={strategy}
              data-testid="lab-badge-row"
              data-strategy={strategy}
              className={stopped && badges.length === 0 ? "lab-badge-row-not-run" : undefined}
            >
              <th scope="row">
                <span className="lab-swatch" style={{ background: STRATEGY_COLORS[strategy] }} />
                {STRATEGY_SHORT_LABELS[strategy]}
              </th>
              {users.map((id) => {
                const b = badges.find((x) => x.userId === id);
                if (!b)
                  return (
                    <td key={id} className="lab-badge-cell" aria-label={stopped ? "did not run" : "not run yet"}>
                      –
                    </td>
                  );
                const off = b.badge !== b.sum;
                return (
                  <td
                    key={id}
                    className="lab-badge-cell"
                    data-testid="lab-badge"
                    data-off={off}
                    aria-label={`badge ${b.badge}, conversations add up to ${b.sum}${off ? ": they disagree" : ""}`}
                  >
                    <span className={`lab-badge-pill${off ? " off" : ""}`}>{b.badge}</span>
                    <span className="lab-badge-sum">Σ {b.sum}</span>
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
