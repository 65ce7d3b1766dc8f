import type Database from "better-sqlite3";
import { lazyStatements } from "./statements.js";
import type { Clock } from "../../base/clock.js";
import type {
  AutomationStore,
  NewSchedule,
  NewWebhookDelivery,
  ScheduleRow,
  ScheduleRunRow,
  WebhookAttemptOutcome,
  WebhookDeliveryRow,
  WebhookDeliveryStatus,
} from "../automation.js";
import { SqliteSideTables } from "./side-tables.js";

const SQL = {
  insertSchedule: `INSERT INTO schedules (id, agent, prompt, cron, every_seconds, session, enabled, next_run_at, created_at, updated_at, owner_key)
    VALUES (@id, @agent, @prompt, @cron, @every_seconds, @session, @enabled, @next_run_at, @created_at, @updated_at, @owner_key)
    RETURNING *`,
  getSchedule: "SELECT * FROM schedules WHERE id = ?",
  listSchedules: "SELECT * FROM schedules ORDER BY rowid",
  setScheduleEnabled: "UPDATE schedules SET enabled = ?, next_run_at = ?, updated_at = ? WHERE id = ? RETURNING *",
  deleteSchedule: "DELETE FROM schedules WHERE id = ?",
  dueSchedule: "SELECT * FROM schedules WHERE id = ? AND enabled = 1 AND next_run_at = ?",
  // SET expressions read the row as it was: the run is marked only where none was.
  claimScheduleDue: `UPDATE schedules SET next_run_at = @next,
      active_session_id = CASE WHEN active_at IS NULL THEN NULL ELSE active_session_id END,
      active_node = CASE WHEN active_at IS NULL THEN @node ELSE active_node END,
      active_seen_at = CASE WHEN active_at IS NULL THEN @started ELSE active_seen_at END,
      active_at = CASE WHEN active_at IS NULL THEN @due ELSE active_at END
    WHERE id = @id AND enabled = 1 AND next_run_at = @due`,
  beginScheduleRun: `UPDATE schedules SET active_at = ?, active_session_id = NULL, active_node = ?, active_seen_at = ?
    WHERE id = ? AND active_at IS NULL`,
  setScheduleRunSession: "UPDATE schedules SET active_session_id = ? WHERE id = ? AND active_at = ?",
  touchScheduleRuns: "UPDATE schedules SET active_seen_at = ? WHERE active_node = ? AND active_at IS NOT NULL",
  clearScheduleRun: `UPDATE schedules SET active_at = NULL, active_session_id = NULL, active_node = NULL, active_seen_at = NULL
    WHERE id = ? AND active_at = ?`,
  // A schedule deleted meanwhile keeps no runs.
  insertScheduleRun: `INSERT INTO schedule_runs (schedule_id, at, session_id, status, error, started_at, finished_at)
    SELECT @schedule_id, @at, @session_id, @status, @error, @started_at, @finished_at WHERE EXISTS (SELECT 1 FROM schedules WHERE id = @schedule_id)`,
  pruneScheduleRuns: `DELETE FROM schedule_runs WHERE schedule_id = @schedule_id AND id NOT IN (
      SELECT id FROM schedule_runs WHERE schedule_id = @schedule_id ORDER BY at DESC, id DESC LIMIT @keep)`,
  listScheduleRuns: `SELECT schedule_id, at, session_id, status, error, started_at, finished_at FROM schedule_runs
    WHERE schedule_id = ? ORDER BY at DESC, id DESC LIMIT ?`,

  insertReceipt: `INSERT INTO webhook_receipts (name, delivery_id, session_id, created_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (name, delivery_id) DO NOTHING`,
  getReceipt: "SELECT session_id FROM webhook_receipts WHERE name = ? AND delivery_id = ?",
  deleteReceipt: "DELETE FROM webhook_receipts WHERE name = ? AND delivery_id = ?",

  insertDelivery: `INSERT INTO webhook_deliveries (id, url, secret_env, type, session_id, body, status, next_attempt_at, created_at, updated_at)
    VALUES (@id, @url, @secret_env, @type, @session_id, @body, 'pending', @next_attempt_at, @created_at, @created_at)
    ON CONFLICT (id) DO NOTHING`,
  dueDeliveries: "SELECT * FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?",
  nextDeliveryAt: "SELECT MIN(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'",
  claimAttempt: `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?, updated_at = ?
    WHERE id = ? AND status = 'pending' AND next_attempt_at = ? RETURNING *`,
  settleAttempt: `UPDATE webhook_deliveries SET status = @status, next_attempt_at = @next_attempt_at, last_status = @last_status,
      last_error = @last_error, updated_at = @at, delivered_at = CASE WHEN @status = 'delivered' THEN @at ELSE delivered_at END
    WHERE id = @id`,
  listDeliveries: `SELECT * FROM webhook_deliveries WHERE (@status IS NULL OR status = @status)
    ORDER BY created_at DESC, rowid DESC LIMIT @limit`,
  pruneReceipts: "DELETE FROM webhook_receipts WHERE created_at < ?",
  pruneDeliveries: "DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ?",
} as const;

type RawSchedule = Omit<ScheduleRow, "enabled"> & { enabled: number };

const scheduleFromRaw = (raw: RawSchedule): ScheduleRow => ({ ...raw, enabled: raw.enabled !== 0 });

/** The tables of AutomationStore (store/automation.ts) on the SQLite connection. */
export abstract class SqliteAutomationTables extends SqliteSideTables implements AutomationStore {
  private readonly automation: { readonly [K in keyof typeof SQL]: Database.Statement };
  private readonly endRunTx: (run: ScheduleRunRow, keep: number) => boolean;
  private readonly claimTx: (id: string, due: number, next: number, node: string, started: number) => { before: ScheduleRow; began: boolean } | undefined;
  private readonly addDeliveriesTx: (rows: readonly NewWebhookDelivery[]) => void;

  protected constructor(db: Database.Database, clock: Clock) {
    super(db, clock);
    this.automation = lazyStatements(db, SQL);
    const endRun = db.transaction((run: ScheduleRunRow, keep: number) => {
      if (this.automation.clearScheduleRun.run(run.schedule_id, run.at).changes === 0) return false;
      this.automation.insertScheduleRun.run(run);
      this.automation.pruneScheduleRuns.run({ schedule_id: run.schedule_id, keep });
      return true;
    });
    this.endRunTx = (run, keep) => endRun.immediate(run, keep);
    const claim = db.transaction((id: string, due: number, next: number, node: string, started: number) => {
      const raw = this.automation.dueSchedule.get(id, due) as RawSchedule | undefined;
      if (!raw) return undefined;
      this.automation.claimScheduleDue.run({ id, due, next, node, started });
      return { before: scheduleFromRaw(raw), began: raw.active_at === null };
    });
    this.claimTx = (id, due, next, node, started) => claim.immediate(id, due, next, node, started);
    const addDeliveries = db.transaction((rows: readonly NewWebhookDelivery[]) => {
      for (const row of rows) this.automation.insertDelivery.run(row);
    });
    this.addDeliveriesTx = (rows) => addDeliveries.immediate(rows);
  }

  async createSchedule(row: NewSchedule): Promise<ScheduleRow> {
    this.assertOpen();
    return scheduleFromRaw(this.automation.insertSchedule.get({ ...row, enabled: row.enabled ? 1 : 0 }) as RawSchedule);
  }

  async getSchedule(id: string): Promise<ScheduleRow | undefined> {
    this.assertOpen();
    const raw = this.automation.getSchedule.get(id) as RawSchedule | undefined;
    return raw && scheduleFromRaw(raw);
  }

  async listSchedules(): Promise<ScheduleRow[]> {
    this.assertOpen();
    return (this.automation.listSchedules.all() as RawSchedule[]).map(scheduleFromRaw);
  }

  async setScheduleEnabled(id: string, enabled: boolean, nextRunAt: number, at: string): Promise<ScheduleRow | undefined> {
    this.assertOpen();
    const raw = this.automation.setScheduleEnabled.get(enabled ? 1 : 0, nextRunAt, at, id) as RawSchedule | undefined;
    return raw && scheduleFromRaw(raw);
  }

  async deleteSchedule(id: string): Promise<boolean> {
    this.assertOpen();
    return this.automation.deleteSchedule.run(id).changes > 0;
  }

  async claimScheduleDue(id: string, dueAt: number, nextRunAt: number, nodeId: string, startedAt: number): Promise<{ before: ScheduleRow; began: boolean } | undefined> {
    this.assertOpen();
    return this.claimTx(id, dueAt, nextRunAt, nodeId, startedAt);
  }

  async beginScheduleRun(id: string, dueAt: number, nodeId: string, startedAt: number): Promise<boolean> {
    this.assertOpen();
    return this.automation.beginScheduleRun.run(dueAt, nodeId, startedAt, id).changes > 0;
  }

  async touchScheduleRuns(nodeId: string, at: number): Promise<void> {
    this.assertOpen();
    this.automation.touchScheduleRuns.run(at, nodeId);
  }

  async setScheduleRunSession(id: string, dueAt: number, sessionId: string): Promise<void> {
    this.assertOpen();
    this.automation.setScheduleRunSession.run(sessionId, id, dueAt);
  }

  async endScheduleRun(run: ScheduleRunRow, keep: number): Promise<boolean> {
    this.assertOpen();
    return this.endRunTx(run, keep);
  }

  async addScheduleRun(run: ScheduleRunRow): Promise<void> {
    this.assertOpen();
    this.automation.insertScheduleRun.run(run);
  }

  async listScheduleRuns(scheduleId: string, limit: number): Promise<ScheduleRunRow[]> {
    this.assertOpen();
    return this.automation.listScheduleRuns.all(scheduleId, limit) as ScheduleRunRow[];
  }

  async claimWebhookReceipt(name: string, deliveryId: string, sessionId: string, at: string): Promise<string | null> {
    this.assertOpen();
    if (this.automation.insertReceipt.run(name, deliveryId, sessionId, at).changes > 0) return null;
    return (this.automation.getReceipt.get(name, deliveryId) as { session_id: string }).session_id;
  }

  async dropWebhookReceipt(name: string, deliveryId: string): Promise<void> {
    this.assertOpen();
    this.automation.deleteReceipt.run(name, deliveryId);
  }

  async addWebhookDeliveries(rows: readonly NewWebhookDelivery[]): Promise<void> {
    this.assertOpen();
    if (rows.length > 0) this.addDeliveriesTx(rows);
  }

  async dueWebhookDeliveries(now: number, limit: number): Promise<WebhookDeliveryRow[]> {
    this.assertOpen();
    return this.automation.dueDeliveries.all(now, limit) as WebhookDeliveryRow[];
  }

  async nextWebhookDeliveryAt(): Promise<number | null> {
    this.assertOpen();
    return (this.automation.nextDeliveryAt.get() as { at: number | null }).at;
  }

  async claimWebhookAttempt(id: string, dueAt: number, holdUntil: number, at: string): Promise<WebhookDeliveryRow | undefined> {
    this.assertOpen();
    return this.automation.claimAttempt.get(holdUntil, at, id, dueAt) as WebhookDeliveryRow | undefined;
  }

  async settleWebhookAttempt(id: string, outcome: WebhookAttemptOutcome): Promise<void> {
    this.assertOpen();
    this.automation.settleAttempt.run({ id, ...outcome });
  }

  async listWebhookDeliveries(filter: { status?: WebhookDeliveryStatus; limit: number }): Promise<WebhookDeliveryRow[]> {
    this.assertOpen();
    return this.automation.listDeliveries.all({ status: filter.status ?? null, limit: filter.limit }) as WebhookDeliveryRow[];
  }

  async pruneWebhooks(before: string): Promise<void> {
    this.assertOpen();
    this.automation.pruneReceipts.run(before);
    this.automation.pruneDeliveries.run(before);
  }
}
