/**
 * The wire shapes of schedules (POST /schedules, GET /schedules/:id, GET /schedules/:id/runs),
 * declared once: the schedule service answers with them, and the typed client and the
 * dashboard read them.
 */

/** `POST /schedules`: exactly one of `cron` (five fields, UTC) and `everySeconds` (at least 1). */
export interface CreateSchedule {
  agent: string;
  prompt: string;
  /** Five-field cron expression, UTC. */
  cron?: string;
  everySeconds?: number;
  /** "new" (default): a new session per run; or the id of an open session of `agent`. */
  session?: string;
  /** default: true */
  enabled?: boolean;
}

/** A schedule (`GET /schedules/:id`). */
export interface Schedule {
  id: string;
  agent: string;
  prompt: string;
  cron: string | null;
  everySeconds: number | null;
  session: string;
  enabled: boolean;
  /** ISO time of the next due time; null while disabled. */
  nextRunAt: string | null;
  createdAt: string;
  updatedAt: string;
  /** The run in flight, if any. */
  running: { at: string; sessionId: string | null } | null;
  /** The API key that made it (its runs' sessions are that key's); null for the server secret. */
  ownerKey: string | null;
}

/** How a due time ended; skipped: the previous run was still going at this due time. */
export type ScheduleRunStatus = "ok" | "error" | "skipped";

/** One due time of a schedule (`GET /schedules/:id/runs`, newest first). */
export interface ScheduleRun {
  /** The due time. */
  at: string;
  sessionId: string | null;
  status: ScheduleRunStatus;
  error?: string;
  /** When the run was taken (null: skipped). */
  startedAt: string | null;
  finishedAt: string;
}
