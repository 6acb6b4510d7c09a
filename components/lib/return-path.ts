/**
 * The page to go back to after signing in (`/?next=/lab`): only a path on this same origin, never another site
 * (`//evil.example`, `/\evil.example`, `https://…`), so the parameter cannot send a person elsewhere.
 */
export function returnPath(raw: string | null, origin: string): string | null {
  if (!raw || !raw.startsWith("/") || raw.startsWith("//") || raw.startsWith("/\\")) return null;
  let url: URL;
  try {
    url = new URL(raw, origin);
  } catch {
    return null;
  }
  if (url.origin !== origin) return null;
  const path = `${url.pathname}${url.search}${url.hash}`;
  return path === "/" ? null : path;
}
