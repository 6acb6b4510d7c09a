/** The app's mark: four strokes crossed by a fifth, as in public/icon.svg. */
export function TallyMark({ size = 24 }: { size?: number }) {
  return (
    <svg width={size} height={size} viewBox="0 0 64 64" aria-hidden="true" focusable="false">
      <rect width="64" height="64" rx="14" fill="var(--accent)" />
      <g stroke="#fff" strokeWidth="5" strokeLinecap="round">
        <path d="M19 16v32M28 16v32M37 16v32M46 16v32" />
        <path d="M12 42 53 22" />
      </g>
    </svg>
  );
}
