import type { ScheduleRunStatus } from "../base/schedules.js";

/**
 * The rows behind what starts agents without a client: schedules and their runs, inbound
 * webhook receipts (de-duplication by delivery id) and outbound webhook deliveries. Both
 * drivers implement AutomationStore; every claim here is one atomic statement, so several
 * nodes on one database agree on who does what.
 */

/** A recurring prompt (POST /schedules). */
export interface ScheduleRow {
  id: string;
  agent: string;
  prompt: string;
  /** Five-field cron expression in UTC; null for an interval schedule. */
  cron: string | null;
  /** Interval in seconds; null for a cron schedule. */
  every_seconds: number | null;
  /** "new" (a new session per run) or the id of the session every run goes to. */
  session: string;
  enabled: boolean;
  /** Epoch ms of the next due time. */
  next_run_at: number;
  created_at: string;
  updated_at: string;
  /** The key that made it (its runs' sessions are that key's); null for the server secret. */
  owner_key: string | null;
  /** The run in flight: its due time (epoch ms), or null when none. */
  active_at: number | null;
  active_session_id: string | null;
  /** The node that runs it. */
  active_node: string | null;
  /** Epoch ms (that node's clock) when its node last said it goes on (it says so every few seconds). */
  active_seen_at: number | null;
}

export type NewSchedule = Omit<ScheduleRow, "active_at" | "active_session_id" | "active_node" | "active_seen_at">;

export type { ScheduleRunStatus };

/** The outcome of one due time of a schedule. */
export interface ScheduleRunRow {
  schedule_id: string;
  /** The due time (epoch ms). */
  at: number;
  session_id: string | null;
  status: ScheduleRunStatus;
  error: string | null;
  /** When the run was taken and marked, ISO; null for a time that did not run (skipped). */
  started_at: string | null;
  /** When the run ended or was skipped, ISO. */
  finished_at: string;
}

export type WebhookDeliveryStatus = "pending" | "delivered" | "failed";

/** One outbound webhook POST and its attempts. */
export interface WebhookDeliveryRow {
  /** The deliveryId in the body; the same for every attempt. */
  id: string;
  url: string;
  /** Environment variable holding the signing secret (the secret itself is never stored). */
  secret_env: string;
  type: string;
  session_id: string;
  /** The exact JSON text every attempt sends. */
  body: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  /** Epoch ms when the next attempt may start (pending), or when it settled. */
  next_attempt_at: number;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  delivered_at: string | null;
}

export type NewWebhookDelivery = Pick<WebhookDeliveryRow, "id" | "url" | "secret_env" | "type" | "session_id" | "body" | "next_attempt_at" | "created_at">;

/** How an attempt ended: delivered, failed for good, or pending again at `next_attempt_at`. */
export interface WebhookAttemptOutcome {
  status: WebhookDeliveryStatus;
  next_attempt_at: number;
  last_status: number | null;
  last_error: string | null;
  at: string;
}

export interface AutomationStore {
  createSchedule(row: NewSchedule): Promise<ScheduleRow>;
  getSchedule(id: string): Promise<ScheduleRow | undefined>;
  /** Oldest first. */
  listSchedules(): Promise<ScheduleRow[]>;
  /** Sets enabled (and the next due time); undefined when there is no such schedule. */
  setScheduleEnabled(id: string, enabled: boolean, nextRunAt: number, at: string): Promise<ScheduleRow | undefined>;
  /** Removes the schedule and its runs; false when there was none. */
  deleteSchedule(id: string): Promise<boolean>;
  /**
   * Takes the due time `dueAt`: moves next_run_at from `dueAt` to `nextRunAt` if the schedule
   * is enabled and still due then, and, when no run is in flight, marks this due time's run
   * (for `nodeId`, begun at `startedAt`), in one atomic step. Defined for exactly one caller
   * service-wide: `before` is the row as it was (its earlier run's mark, if any), `began`
   * whether this call marked the run. Undefined when another caller took it first (or the
   * schedule is disabled or gone).
   */
  claimScheduleDue(id: string, dueAt: number, nextRunAt: number, nodeId: string, startedAt: number): Promise<{ before: ScheduleRow; began: boolean } | undefined>;
  /** Marks the run of `dueAt` in flight, only when no run is; false otherwise (after an earlier run's mark was ended). */
  beginScheduleRun(id: string, dueAt: number, nodeId: string, startedAt: number): Promise<boolean>;
  /** The node's runs still go on: their marks are seen at `at`. */
  touchScheduleRuns(nodeId: string, at: number): Promise<void>;
  /** Names the session of the run in flight (when it still is the run of `dueAt`). */
  setScheduleRunSession(id: string, dueAt: number, sessionId: string): Promise<void>;
  /**
   * Records how the run of `run.at` ended and clears the in-flight mark, in one
   * transaction, only while the mark is still that run's; false (nothing written) otherwise.
   * Keeps the newest `keep` runs of the schedule.
   */
  endScheduleRun(run: ScheduleRunRow, keep: number): Promise<boolean>;
  /** Records a due time that did not run (skipped). */
  addScheduleRun(run: ScheduleRunRow): Promise<void>;
  /** Newest first. */
  listScheduleRuns(scheduleId: string, limit: number): Promise<ScheduleRunRow[]>;

  /**
   * Records that delivery `deliveryId` of inbound webhook `name` starts `sessionId`.
   * Null when this call recorded it; else the session id the first delivery recorded.
   */
  claimWebhookReceipt(name: string, deliveryId: string, sessionId: string, at: string): Promise<string | null>;
  /** Forgets a receipt whose session could not start, so a retry of the delivery may run. */
  dropWebhookReceipt(name: string, deliveryId: string): Promise<void>;

  /** Stores deliveries; an id already stored (another node queued it) is left as it is. */
  addWebhookDeliveries(rows: readonly NewWebhookDelivery[]): Promise<void>;
  /** Pending deliveries due by `now`, earliest first. */
  dueWebhookDeliveries(now: number, limit: number): Promise<WebhookDeliveryRow[]>;
  /** Epoch ms of the earliest pending delivery, or null when none is pending. */
  nextWebhookDeliveryAt(): Promise<number | null>;
  /**
   * Takes the attempt of a pending delivery still due at `dueAt` (one caller service-wide):
   * counts it and holds the delivery until `holdUntil`, so nobody else tries it meanwhile.
   */
  claimWebhookAttempt(id: string, dueAt: number, holdUntil: number, at: string): Promise<WebhookDeliveryRow | undefined>;
  settleWebhookAttempt(id: string, outcome: WebhookAttemptOutcome): Promise<void>;
  /** Newest first. */
  listWebhookDeliveries(filter: { status?: WebhookDeliveryStatus; limit: number }): Promise<WebhookDeliveryRow[]>;
  /** Drops receipts and settled deliveries created before `before` (ISO). */
  pruneWebhooks(before: string): Promise<void>;
}
