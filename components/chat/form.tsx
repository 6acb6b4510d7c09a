import { useState, type InputHTMLAttributes, type ReactNode } from "react";

type InputProps = Omit<InputHTMLAttributes<HTMLInputElement>, "id" | "value" | "onChange">;

/** A label and its text input; the input's id is also its test id. */
export function TextField({
  id,
  label,
  value,
  onValue,
  ...input
}: InputProps & { id: string; label: ReactNode; value: string; onValue: (value: string) => void }) {
  return (
    <>
      <label htmlFor={id}>{label}</label>
      <input id={id} data-testid={id} value={value} onChange={(e) => onValue(e.target.value)} {...input} />
    </>
  );
}

/**
 * A form that asks the store for something which answers with the server's message on failure: `busy` while
 * the call runs (a second submit meanwhile is ignored), and `error`, the message to show.
 */
export function useServerCall() {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  /** Runs `request` unless one is running; resolves with whether it succeeded. */
  async function call(request: () => Promise<string | null>): Promise<boolean> {
    if (busy) return false;
    setBusy(true);
    setError(null);
    const failure = await request();
    setBusy(false);
    if (failure) setError(failure);
    return !failure;
  }

  return { busy, error, setError, call };
}
