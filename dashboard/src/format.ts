/** Number and time formatting shared by the views. */

export function compactNumber(n: number): string {
  if (!Number.isFinite(n)) return "–";
  if (Math.abs(n) < 1000) return String(Math.round(n));
  if (Math.abs(n) < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

export function money(usd: unknown): string {
  if (typeof usd !== "number" || !Number.isFinite(usd)) return "–";
  return usd < 0.01 && usd > 0 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

export function duration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`;
}

/** "in 5 m", "3 s ago". */
export function relativeTime(epochMs: number, now = Date.now()): string {
  const delta = epochMs - now;
  const text = duration(Math.abs(delta)).replace(/\.\d s$/, " s");
  return delta >= 0 ? `in ${text}` : `${text} ago`;
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function shortId(id: string): string {
  return id.replace(/^sess_/, "").slice(0, 8);
}

export function pretty(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}
