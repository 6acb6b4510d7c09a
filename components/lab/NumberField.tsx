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

/** A labelled number input; an entry that is not a number counts as 0. */
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
        value={value}
        onChange={(e) => onValue(num(e.target.value))}
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

function num(value: string): number {
  const n = Number(value);
  return Number.isFinite(n) ? n : 0;
}
