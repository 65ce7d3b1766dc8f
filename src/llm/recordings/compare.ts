/**
 * Whether a model request is the one a recording holds, ids, dates and the workspace path
 * aside: those change from one run to the next while the agent's behaviour does not.
 */

/** Veil's ids (`msg_…`, `sess_…`: a prefix and 12+ url-safe characters) and UUIDs. */
const ID = /\b[a-z][a-z0-9]{1,15}_[A-Za-z0-9_-]{12,}|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
/** ISO-8601 days and times (`2026-05-01`, `2026-05-01T10:00:00.000Z`). */
const DATE = /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?/g;

/** A string with its workspace path, ids and dates put as placeholders. */
export function normalizedText(text: string, workspace: string): string {
  const placed = workspace.length > 1 ? text.split(workspace).join("<workspace>") : text;
  return placed.replace(DATE, "<date>").replace(ID, "<id>");
}

/** A JSON value with every string normalized (object keys too: a path can be one). */
export function normalized(value: unknown, workspace: string): unknown {
  if (typeof value === "string") return normalizedText(value, workspace);
  if (Array.isArray(value)) return value.map((item) => normalized(item, workspace));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [normalizedText(key, workspace), normalized(item, workspace)]));
  }
  return value;
}

/** The first place two normalized JSON values differ, as `path: recorded … , now …`; null when they are equal. */
export function firstDifference(recorded: unknown, now: unknown, path = "request"): string | null {
  if (Object.is(recorded, now)) return null;
  if (typeof recorded === "string" && typeof now === "string") return `${path}: ${stringDifference(recorded, now)}`;
  if (Array.isArray(recorded) && Array.isArray(now)) {
    for (let i = 0; i < Math.min(recorded.length, now.length); i++) {
      const difference = firstDifference(recorded[i], now[i], `${path}[${i}]`);
      if (difference) return difference;
    }
    return recorded.length === now.length ? null : `${path}: recorded ${recorded.length} items, now ${now.length}`;
  }
  if (isObject(recorded) && isObject(now)) {
    const keys = [...new Set([...Object.keys(recorded), ...Object.keys(now)])];
    for (const key of keys) {
      const at = `${path}.${key}`;
      if (!(key in now)) return `${at}: recorded ${shown(recorded[key])}, now absent`;
      if (!(key in recorded)) return `${at}: not recorded, now ${shown(now[key])}`;
      const difference = firstDifference(recorded[key], now[key], at);
      if (difference) return difference;
    }
    return null;
  }
  return `${path}: recorded ${shown(recorded)}, now ${shown(now)}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const AROUND = 40;

/** Where two strings part, with a little of each around that point. */
function stringDifference(recorded: string, now: string): string {
  let at = 0;
  while (at < recorded.length && at < now.length && recorded[at] === now[at]) at++;
  const from = Math.max(0, at - AROUND);
  const piece = (text: string) => JSON.stringify(`${from > 0 ? "…" : ""}${text.slice(from, at + AROUND)}${text.length > at + AROUND ? "…" : ""}`);
  return `differs at character ${at}: recorded ${piece(recorded)}, now ${piece(now)}`;
}

function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 2 * AROUND ? `${text.slice(0, 2 * AROUND)}…` : text;
}
