import { VeilError } from "../errors.js";

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/** A length of time as settings and flags take it: a number and a unit (s, m, h, d, w), e.g. "90s", "24h", "7d". */
export const DURATION_PATTERN = "^\\s*\\d+(\\.\\d+)?\\s*[smhdw]\\s*$";
const DURATION = new RegExp(DURATION_PATTERN);

/**
 * "7d" → 604800000 ms. A unit is required (a bare "7" could mean minutes or days); `what`
 * names the setting or flag in the VALIDATION_ERROR.
 *
 * @example parseDuration("36h", "--idle") // 129_600_000
 */
export function parseDuration(text: string, what: string): number {
  if (!DURATION.test(text)) throw new VeilError("VALIDATION_ERROR", `${what}: "${text}" is not a duration; use a number and a unit: 90s, 30m, 24h, 7d, 2w`);
  const trimmed = text.trim();
  return Math.round(Number.parseFloat(trimmed) * UNIT_MS[trimmed.at(-1) as keyof typeof UNIT_MS]);
}

/** A coarse age for listings: "40s", "12m", "5h", "3d". */
export function formatAge(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}
