import { VeilError } from "../../errors.js";

/** Longest delay a wake-up accepts: 30 days. */
export const MAX_WAKEUP_MS = 30 * 24 * 60 * 60 * 1000;

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
};

const DURATION = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*([a-z]*)$/i;

/**
 * Parses a wake-up delay: "30m", "90s", "2h", or a bare number of
 * minutes ("5", "0.5"). Returns milliseconds; 0 means "cancel". Throws
 * VALIDATION_ERROR for anything else, negatives, and delays over 30 days.
 *
 * @example parseWakeupTime("90s") // 90_000
 * @example parseWakeupTime("0.5") // 30_000 (bare numbers are minutes)
 */
export function parseWakeupTime(time: string | number): number {
  const text = String(time).trim();
  const match = DURATION.exec(text);
  if (!match) {
    throw new VeilError("VALIDATION_ERROR", `time "${text}" is not a delay; use "90s", "30m", "2h", or a bare number of minutes ("5"); "0" cancels`);
  }
  const value = Number(match[1]);
  const unit = (match[2] ?? "").toLowerCase();
  const factor = unit === "" ? 60_000 : UNIT_MS[unit];
  if (factor === undefined) {
    throw new VeilError("VALIDATION_ERROR", `time "${text}" has an unknown unit "${match[2]}"; use s, m or h (a bare number means minutes)`);
  }
  if (!Number.isFinite(value)) throw new VeilError("VALIDATION_ERROR", `time "${text}" is not a finite number`);
  if (value < 0) throw new VeilError("VALIDATION_ERROR", `time "${text}" is negative; use a positive delay, or "0" to cancel`);
  const ms = Math.round(value * factor);
  if (ms > MAX_WAKEUP_MS) throw new VeilError("VALIDATION_ERROR", `time "${text}" is too long; the longest wake-up delay is 30 days ("720h")`);
  if (value > 0 && ms < 1) throw new VeilError("VALIDATION_ERROR", `time "${text}" is shorter than a millisecond`);
  return ms;
}

/** "90000" ms → "1m30s", for messages. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  let rest = Math.round(ms / 1000);
  const parts: string[] = [];
  for (const [unit, size] of [["d", 86_400], ["h", 3600], ["m", 60], ["s", 1]] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n}${unit}`);
    rest -= n * size;
  }
  return parts.join("");
}
