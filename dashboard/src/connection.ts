/** The connection indicator over several streams, and letting go of them while the tab is hidden. */
import { h } from "./dom.js";
import type { LiveStream, StreamState } from "./stream.js";

/** A tab hidden this long closes its streams (and reopens them, catching up, when shown again). */
export const HIDDEN_PAUSE_MS = 60_000;

export class ConnectionIndicator {
  /** Its trimmed text is `live` exactly when every stream is open (the tests and scripts wait on that word). */
  readonly el = h("span", { testid: "connection-status", class: "conn connecting", role: "status", "aria-label": "Connection" }, "connecting");
  private readonly states = new Map<string, StreamState>();

  constructor(names: readonly string[]) {
    for (const name of names) this.states.set(name, "connecting");
  }

  set(name: string, state: StreamState): void {
    this.states.set(name, state);
    const all = [...this.states.values()];
    const shown = all.every((s) => s === "live") ? "live" : all.includes("reconnecting") ? "reconnecting" : all.includes("paused") ? "paused" : "connecting";
    this.el.textContent = shown;
    this.el.className = `conn ${shown}`;
  }
}

/** Pauses the streams once the tab has been hidden for HIDDEN_PAUSE_MS; resumes them when it is shown. Returns the unhook. */
export function pauseWhileHidden(streams: readonly LiveStream[]): () => void {
  let timer: number | undefined;
  const onVisibility = () => {
    window.clearTimeout(timer);
    if (document.hidden) timer = window.setTimeout(() => streams.forEach((s) => s.pause()), HIDDEN_PAUSE_MS);
    else streams.forEach((s) => s.resume());
  };
  document.addEventListener("visibilitychange", onVisibility);
  return () => {
    window.clearTimeout(timer);
    document.removeEventListener("visibilitychange", onVisibility);
  };
}
