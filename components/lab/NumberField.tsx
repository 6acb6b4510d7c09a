"use client";

import { useState } from "react";

/** What a number input of the lab's forms asks for. */
export interface NumberFieldSpec {
  label: string;
  min: number;
  max: number;
  /** Defaults to 1, as for any number input. */
  step?: number;
  /** What the field means, shown as its tooltip. */
  hint?: string;
}

interface NumberFieldProps extends NumberFieldSpec {
  testId: string;
  value: number;
  onValue: (value: number) => void;
  disabled?: boolean;
  className?: string;
}

/**
 * A labelled number input; an entry that is not a number counts as 0. It shows what was typed without leading
 * zeros ("02000" reads 2000): React leaves a number input's text alone while it parses to the value shown, so
 * the input gets the text, normalized, not the number. A cleared field stays empty until it loses focus.
 */
export function NumberField({
  label,
  min,
  max,
  step = 1,
  hint,
  testId,
  value,
  onValue,
  disabled,
  className = "lab-field",
}: NumberFieldProps) {
  // What was typed, while it still stands for the value (a preset or another change shows the new value).
  const [draft, setDraft] = useState<{ text: string; value: number } | null>(null);
  const shown = draft && draft.value === value ? draft.text : String(value);
  return (
    <label className={className} title={hint}>
      <span>{label}</span>
      <input
        type="number"
        data-testid={testId}
        aria-description={hint}
        min={min}
        max={max}
        step={step}
        value={shown}
        onChange={(e) => {
          const text = normalizeNumberText(e.target.value);
          setDraft({ text, value: num(text) });
          onValue(num(text));
        }}
        onBlur={() => setDraft(null)}
        disabled={disabled}
      />
    </label>
  );
}

/** A NumberField for each of `fields`, showing `values[key]` and tested as `lab-<key>`. */
export function NumberFields<K extends string>({
  fields,
  values,
  onChange,
  disabled,
}: {
  fields: readonly (NumberFieldSpec & { key: K })[];
  values: Record<K, number>;
  onChange: (patch: Partial<Record<K, number>>) => void;
  disabled: boolean;
}) {
  return (
    <>
      {fields.map(({ key, ...spec }) => (
        <NumberField
          key={key}
          {...spec}
          testId={`lab-${key}`}
          value={values[key]}
          onValue={(n) => onChange({ [key]: n } as Partial<Record<K, number>>)}
          disabled={disabled}
        />
      ))}
    </>
  );
}

/** A number input's text without its leading zeros: "02000" → "2000", "00.5" → "0.5", "" stays "". */
export function normalizeNumberText(text: string): string {
  return text.replace(/^(-?)0+(?=\d)/, "$1");
}

function num(value: string): number {
  const n = Number(value);
  return Number.isFinite(n) ? n : 0;
}
