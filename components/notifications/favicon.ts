/**
 * The tab's icon carries the app badge: a browser tab too narrow for its title ("(3) Tally") still shows the icon,
 * and pinned tabs show nothing else. The icon is public/icon.svg drawn again with a red count in its corner, as a
 * data: URL (the Content-Security-Policy allows data: images; nothing is fetched).
 */

/** public/icon.svg's drawing, the same marks: keep the two in step. */
const MARK =
  '<rect width="64" height="64" rx="14" fill="#4f46e5"/>' +
  '<g stroke="#fff" stroke-width="5" stroke-linecap="round">' +
  '<path d="M19 16v32M28 16v32M37 16v32M46 16v32"/><path d="M12 42 53 22"/></g>';

/** What the corner says: the count up to 99, then "99+" (two digits are all a 16-pixel icon can show). */
export function faviconLabel(count: number): string {
  if (!Number.isFinite(count) || count <= 0) return "";
  return count > 99 ? "99+" : String(Math.floor(count));
}

/** The icon as an SVG document: the plain mark for 0, the mark with its count in a red pill otherwise. */
export function faviconSvg(count: number): string {
  const label = faviconLabel(count);
  if (label === "") return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">${MARK}</svg>`;
  // Wide enough for the label: one digit is a circle, more a pill, right-aligned in the corner.
  const width = label.length === 1 ? 40 : label.length === 2 ? 52 : 64;
  const fontSize = label.length === 3 ? 30 : 34;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">${MARK}` +
    // Inset by half the white ring's width, so that the ring is not cut at the icon's edges.
    `<rect x="${65.5 - width}" y="1.5" width="${width - 3}" height="38" rx="19" fill="#dc2626" stroke="#fff" stroke-width="3"/>` +
    `<text x="${64 - width / 2}" y="32" text-anchor="middle" font-family="Arial,Helvetica,sans-serif" ` +
    `font-weight="700" font-size="${fontSize}" fill="#fff">${label}</text></svg>`
  );
}

export function faviconHref(count: number): string {
  return `data:image/svg+xml,${encodeURIComponent(faviconSvg(count))}`;
}

/**
 * Points every icon link of the page at the icon for `count` and keeps it so: Next.js renders the links from the
 * layout's metadata and may write them again. Returns the function that puts the plain icon back and stops.
 */
export function showFaviconCount(count: number, doc: Document = document): () => void {
  const href = faviconHref(count);
  const apply = () => {
    for (const link of doc.head.querySelectorAll<HTMLLinkElement>('link[rel~="icon"]')) {
      if (link.getAttribute("href") !== href) link.setAttribute("href", href);
    }
  };
  apply();
  const keep = new MutationObserver(apply);
  keep.observe(doc.head, { childList: true, subtree: true, attributes: true, attributeFilter: ["href"] });
  return () => {
    keep.disconnect();
    const plain = faviconHref(0);
    for (const link of doc.head.querySelectorAll<HTMLLinkElement>('link[rel~="icon"]')) {
      link.setAttribute("href", plain);
    }
  };
}
