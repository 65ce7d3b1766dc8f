/**
 * The selected session lives in the address (`#/sessions/<id>`): a reload, a bookmark or a
 * link opens it again, and Back goes to the one before. Only the fragment changes, so the
 * server sees one page and the secret never enters a URL.
 */
const SESSION_ROUTE = /^#\/sessions\/([^/?#]+)$/;

export function sessionInAddress(hash = location.hash): string | null {
  const match = SESSION_ROUTE.exec(hash);
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]!);
  } catch {
    return null;
  }
}

/** Puts the session in the address (a history entry per change, so Back works); null clears it. */
export function showInAddress(sessionId: string | null): void {
  if (sessionInAddress() === sessionId) return;
  if (sessionId) history.pushState(null, "", `#/sessions/${encodeURIComponent(sessionId)}`);
  else history.replaceState(null, "", `${location.pathname}${location.search}`);
}

/** Calls `onChange` with the session in the address whenever the user changes it (Back, Forward, an edited URL). */
export function watchAddress(onChange: (sessionId: string | null) => void): () => void {
  const listener = () => onChange(sessionInAddress());
  window.addEventListener("popstate", listener);
  window.addEventListener("hashchange", listener);
  return () => {
    window.removeEventListener("popstate", listener);
    window.removeEventListener("hashchange", listener);
  };
}
