"use client";

import { GLOSSARY, RESULT_COLUMNS } from "./explain";

/** Every word of the lab's jargon in one place; a <details>, so it opens with the keyboard too. */
export function LabGlossary() {
  return (
    <details className="lab-glossary" data-testid="lab-glossary">
      <summary>What do these words mean?</summary>
      <dl>
        {GLOSSARY.map((g) => (
          <div key={g.term}>
            <dt>{g.term}</dt>
            <dd>{g.meaning}</dd>
          </div>
        ))}
        {RESULT_COLUMNS.map((c) => (
          <div key={c.heading}>
            <dt>{c.heading}</dt>
            <dd>{c.meaning}.</dd>
          </div>
        ))}
      </dl>
    </details>
  );
}
