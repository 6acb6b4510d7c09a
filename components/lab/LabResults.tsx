"use client";

import type { ReactNode } from "react";
import { STRATEGY_COLORS, STRATEGY_LABELS, STRATEGY_SHORT_LABELS } from "./colors";
import { columnMeaning, formatMs, glossaryMeaning, notRun, RESULT_COLUMNS, summarize } from "./explain";
import { useLabStore } from "./LabProvider";

const DRIFT = "drift at the end (users / Σ)";
const WRONG = "≠ truth (counts / totals)";

function Heading({ heading, children }: { heading: string; children?: ReactNode }) {
  return (
    <th scope="col" role="columnheader" title={columnMeaning(heading)}>
      {children ?? heading}
    </th>
  );
}

/** A figure; `label` is its column's heading, which a phone's card shows beside it (lab.css). */
function Cell({
  label,
  className,
  testId,
  children,
}: {
  label: string;
  className?: string;
  testId?: string;
  children: ReactNode;
}) {
  return (
    <td role="cell" className={className} data-label={label} data-testid={testId}>
      {/* Shown only on a phone's card; a screen reader has the column's heading already. */}
      <span className="lab-cell-label" aria-hidden="true">
        {label}
      </span>
      {children}
    </td>
  );
}

/** The final numbers of every strategy; drift and differences from the truth are what the lab is about. */
export function LabResults() {
  const result = useLabStore((s) => s.result);
  const redisRestart = useLabStore((s) => s.run?.workload.faults.redisRestart ?? s.form.faults.redisRestart);
  const asked = useLabStore((s) => s.run?.strategies);
  const watched = useLabStore((s) => s.watching);
  if (!result) return null;
  const completed = result.end.reason === "completed";
  return (
    <section className="lab-section" aria-labelledby="lab-results-title">
      <h2 id="lab-results-title" data-testid="lab-results-title">
        {watched ? "Results of someone else's run" : "Results"}
      </h2>
      {!completed && (
        <p className="lab-notice" data-testid="lab-ended-early">
          The run was stopped before its last operation: these are the numbers of the operations done until then.
          {asked && notRun(asked, result.results) && ` ${notRun(asked, result.results)}`}
        </p>
      )}
      <div className="lab-table-wrap">
        {/* Roles spelled out: a phone shows each row as a card (lab.css), and a table given another display loses its
            table semantics in Safari unless its roles are explicit (Chromium keeps them either way). */}
        <table className="lab-table" role="table" data-testid="lab-results" aria-describedby="lab-results-legend">
          <thead role="rowgroup">
            {/* What the lab is about first, beside the (sticky) strategy: on a narrow screen the rest scrolls. */}
            <tr role="row">
              <th scope="col" role="columnheader">
                strategy
              </th>
              <Heading heading={DRIFT} />
              <Heading heading={WRONG} />
              <Heading heading="lost" />
              <Heading heading="aborted" />
              <Heading heading="ops/s" />
              <Heading heading="p50 / p99 ms">p50 ms</Heading>
              <Heading heading="p50 / p99 ms">p99 ms</Heading>
              <Heading heading="retries" />
              <Heading heading="lock waits" />
            </tr>
          </thead>
          <tbody role="rowgroup">
            {result.results.map((r) => (
              <tr
                key={r.strategy}
                role="row"
                data-testid="lab-result-row"
                data-strategy={r.strategy}
                data-drift={r.drift.users}
              >
                <th scope="row" role="rowheader" title={glossaryMeaning(STRATEGY_LABELS[r.strategy])}>
                  <span className="lab-swatch" style={{ background: STRATEGY_COLORS[r.strategy] }} />
                  {STRATEGY_SHORT_LABELS[r.strategy]}
                </th>
                <Cell label={DRIFT} className={r.drift.users > 0 ? "lab-bad" : "lab-good"} testId="lab-result-drift">
                  {r.drift.users} / {r.drift.amount}
                </Cell>
                <Cell
                  label={WRONG}
                  className={r.wrong.counts + r.wrong.totals > 0 ? "lab-bad" : "lab-good"}
                  testId="lab-result-wrong"
                >
                  {r.wrong.counts} / {r.wrong.totals}
                </Cell>
                <Cell label="lost">{r.lost}</Cell>
                <Cell label="aborted">{r.aborted}</Cell>
                <Cell label="ops/s">{r.opsPerSec}</Cell>
                <Cell label="p50 ms" testId="lab-result-p50">
                  {formatMs(r.p50Ms)}
                </Cell>
                <Cell label="p99 ms" testId="lab-result-p99">
                  {formatMs(r.p99Ms)}
                </Cell>
                <Cell label="retries">{r.retries}</Cell>
                <Cell label="lock waits">{r.lockWaits}</Cell>
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
