import { createRequire } from "node:module";
import type { Cron } from "croner";

// Loaded at the first cron expression, not at start: `veil run` and a server without cron
// schedules never need it (its load was a tenth of `veil run`'s module start-up).
const require = createRequire(import.meta.url);
let croner: typeof import("croner") | undefined;
const cronClass = (): typeof Cron => (croner ??= require("croner") as typeof import("croner")).Cron;
import { VeilError } from "../../errors.js";

/** Longest interval an `everySeconds` schedule may have: ten years. */
export const MAX_EVERY_SECONDS = 10 * 366 * 24 * 3600;

/** When a schedule is due: a five-field cron expression in UTC, or a fixed interval. */
export type ScheduleTiming = { cron: string; everySeconds?: undefined } | { everySeconds: number; cron?: undefined };

/**
 * A five-field cron expression (minute hour day-of-month month day-of-week, UTC) compiled by
 * croner. Day-of-month and day-of-week combine with OR, as in Vixie cron.
 */
export function compileCron(expression: string): Cron {
  try {
    return new (cronClass())(expression.trim(), { timezone: "UTC", mode: "5-part", domAndDow: false });
  } catch (error) {
    throw new VeilError("VALIDATION_ERROR", `invalid cron expression "${expression}": ${(error as Error).message.replace(/^CronPattern: /, "")} (five fields, UTC: minute hour day-of-month month day-of-week)`);
  }
}

/** compileCron, refusing an expression that names no real date (`0 0 31 2 *`): it would never fire. */
export function checkCron(expression: string): Cron {
  const cron = compileCron(expression);
  if (cron.nextRun(new Date(0)) === null) throw new VeilError("VALIDATION_ERROR", `cron expression "${expression}" never matches a date`);
  return cron;
}

/** Checks a schedule's timing: exactly one of cron and everySeconds, each valid. */
export function checkTiming(input: { cron?: string; everySeconds?: number }): ScheduleTiming {
  const hasCron = input.cron !== undefined;
  const hasEvery = input.everySeconds !== undefined;
  if (hasCron === hasEvery) throw new VeilError("VALIDATION_ERROR", 'give exactly one of "cron" (five fields, UTC) and "everySeconds"');
  if (hasCron) {
    checkCron(input.cron!);
    return { cron: input.cron!.trim() };
  }
  const every = input.everySeconds!;
  if (!Number.isFinite(every) || every < 1) throw new VeilError("VALIDATION_ERROR", `"everySeconds" must be at least 1; got ${every}`);
  if (every > MAX_EVERY_SECONDS) throw new VeilError("VALIDATION_ERROR", `"everySeconds" must be at most ${MAX_EVERY_SECONDS} (ten years); got ${every}`);
  return { everySeconds: every };
}

/**
 * The first due time after `now`, following `due` (a time that came due): an interval stays
 * on its grid (due + k·interval), a cron expression takes its next match. Times missed in
 * between are skipped, so a schedule that was down for hours fires once, not once per miss.
 */
export function nextDueAfter(timing: { cron: string | null; every_seconds: number | null }, due: number, now: number, cron?: Cron): number {
  if (timing.every_seconds !== null) {
    const interval = Math.max(1, Math.round(timing.every_seconds * 1000));
    const periods = Math.floor((Math.max(now, due) - due) / interval) + 1;
    return due + periods * interval;
  }
  const next = (cron ?? compileCron(timing.cron!)).nextRun(new Date(Math.max(now, due)));
  // compileCron refused expressions that never match; one whose last match is past stops here.
  return next ? next.getTime() : Number.MAX_SAFE_INTEGER;
}

/** The first due time of a schedule created (or enabled again) at `now`. */
export function firstDue(timing: { cron: string | null; every_seconds: number | null }, now: number, cron?: Cron): number {
  if (timing.every_seconds !== null) return now + Math.max(1, Math.round(timing.every_seconds * 1000));
  return nextDueAfter(timing, now, now, cron);
}

