"use client";

import type { ReactNode } from "react";
import { STRATEGY_COLORS, STRATEGY_LABELS, STRATEGY_SHORT_LABELS } from "./colors";
import { columnMeaning, formatMs, glossaryMeaning, notRun, RESULT_COLUMNS, summarize } from "./explain";
import { useLabStore } from "./LabProvider";

function Heading({ heading, children }: { heading: string; children?: ReactNode }) {
  return (
    <th scope="col" title={columnMeaning(heading)}>
      {children ?? heading}
    </th>
  );
}

/** The final numbers of every strategy; drift and differences from the truth are what the lab is about. */
export function LabResults() {
  const result = useLabStore((s) => s.result);
  const redisRestart = useLabStore((s) => s.run?.workload.faults.redisRestart ?? s.form.faults.redisRestart);
  const asked = useLabStore((s) => s.run?.strategies);
  const owner = useLabStore((s) => s.watching?.owner);
  if (!result) return null;
  const completed = result.end.reason === "completed";
  return (
    <section className="lab-section" aria-labelledby="lab-results-title">
      <h2 id="lab-results-title" data-testid="lab-results-title">
        Results
        {owner && (
          <>
            {" "}
            of <bdi>{owner}</bdi>&apos;s run
          </>
        )}
      </h2>
      {!completed && (
        <p className="lab-notice" data-testid="lab-ended-early">
          The run was stopped before its last operation: these are the numbers of the operations done until then.
          {asked && notRun(asked, result.results) && ` ${notRun(asked, result.results)}`}
        </p>
      )}
      <div className="lab-table-wrap">
        <table className="lab-table" data-testid="lab-results" aria-describedby="lab-results-legend">
          <thead>
            {/* What the lab is about first, beside the (sticky) strategy: on a narrow screen the rest scrolls. */}
            <tr>
              <th scope="col">strategy</th>
              <Heading heading="drift at the end (users / Σ)" />
              <Heading heading="≠ truth (counts / totals)" />
              <Heading heading="lost" />
              <Heading heading="aborted" />
              <Heading heading="ops/s" />
              <Heading heading="p50 / p99 ms">p50 ms</Heading>
              <Heading heading="p50 / p99 ms">p99 ms</Heading>
              <Heading heading="retries" />
              <Heading heading="lock waits" />
            </tr>
          </thead>
          <tbody>
            {result.results.map((r) => (
              <tr key={r.strategy} data-testid="lab-result-row" data-strategy={r.strategy} data-drift={r.drift.users}>
                <th scope="row" title={glossaryMeaning(STRATEGY_LABELS[r.strategy])}>
                  <span className="lab-swatch" style={{ background: STRATEGY_COLORS[r.strategy] }} />
                  {STRATEGY_SHORT_LABELS[r.strategy]}
                </th>
                <td className={r.drift.users > 0 ? "lab-bad" : "lab-good"} data-testid="lab-result-drift">
                  {r.drift.users} / {r.drift.amount}
                </td>
                <td
                  className={r.wrong.counts + r.wrong.totals > 0 ? "lab-bad" : "lab-good"}
                  data-testid="lab-result-wrong"
                >
                  {r.wrong.counts} / {r.wrong.totals}
                </td>
                <td>{r.lost}</td>
                <td>{r.aborted}</td>
                <td>{r.opsPerSec}</td>
                <td data-testid="lab-result-p50">{formatMs(r.p50Ms)}</td>
                <td data-testid="lab-result-p99">{formatMs(r.p99Ms)}</td>
                <td>{r.retries}</td>
                <td>{r.lockWaits}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p className="lab-summary" aria-live="polite">
        <span className="lab-summary-when" data-testid="lab-summary-when">
          {completed
            ? "At the end, once every operation finished:"
            : "When it was stopped, once the operations under way had finished:"}
        </span>{" "}
        <span data-testid="lab-summary">{summarize(result.results, { redisRestart })}</span>
      </p>
      <dl className="lab-legend" id="lab-results-legend" data-testid="lab-results-legend">
        {RESULT_COLUMNS.map((c) => (
          <div key={c.heading}>
            <dt>{c.heading}</dt>
            <dd>{c.meaning}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}
