"use client";

import { STRATEGY_COLORS } from "./colors";
import { useLabStore } from "./LabProvider";

/** The final numbers of every strategy; drift and differences from the truth are what the lab is about. */
export function LabResults() {
  const result = useLabStore((s) => s.result);
  if (!result) return null;
  return (
    <section className="lab-section" aria-labelledby="lab-results-title">
      <h2 id="lab-results-title">Results</h2>
      <div className="lab-table-wrap">
        <table className="lab-table" data-testid="lab-results">
          <thead>
            <tr>
              <th>strategy</th>
              <th>ops/s</th>
              <th>p50 ms</th>
              <th>p99 ms</th>
              <th>retries</th>
              <th>lock waits</th>
              <th>aborted</th>
              <th>lost</th>
              <th>drift (users / Σ)</th>
              <th>≠ truth (counts / totals)</th>
            </tr>
          </thead>
          <tbody>
            {result.results.map((r) => (
              <tr key={r.strategy} data-testid="lab-result-row" data-strategy={r.strategy} data-drift={r.drift.users}>
                <th scope="row">
                  <span className="lab-swatch" style={{ background: STRATEGY_COLORS[r.strategy] }} />
                  {r.strategy}
                </th>
                <td>{r.opsPerSec}</td>
                <td>{r.p50Ms}</td>
                <td>{r.p99Ms}</td>
                <td>{r.retries}</td>
                <td>{r.lockWaits}</td>
                <td>{r.aborted}</td>
                <td>{r.lost}</td>
                <td className={r.drift.users > 0 ? "lab-bad" : "lab-good"}>
                  {r.drift.users} / {r.drift.amount}
                </td>
                <td className={r.wrong.counts + r.wrong.totals > 0 ? "lab-bad" : "lab-good"}>
                  {r.wrong.counts} / {r.wrong.totals}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
