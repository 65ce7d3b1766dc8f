/** Statements of AutomationStore (store/automation.ts); merged into SQL (sql.ts). */

const SCHEDULE_COLUMNS = `id, agent, prompt, cron, every_seconds, session, enabled, next_run_at, created_at, updated_at, owner_key,
  active_at, active_session_id, active_node, active_seen_at`;
const RUN_COLUMNS = "schedule_id, at, session_id, status, error, started_at, finished_at";
const DELIVERY_COLUMNS = `id, url, secret_env, type, session_id, body, status, attempts, next_attempt_at, last_status, last_error,
  created_at, updated_at, delivered_at`;

export const AUTOMATION_SQL = {
  insertSchedule: `INSERT INTO schedules (id, agent, prompt, cron, every_seconds, session, enabled, next_run_at, created_at, updated_at, owner_key)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING ${SCHEDULE_COLUMNS}`,
  getSchedule: `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE id = $1`,
  listSchedules: `SELECT ${SCHEDULE_COLUMNS} FROM schedules ORDER BY pos`,
  setScheduleEnabled: `UPDATE schedules SET enabled = $2, next_run_at = $3, updated_at = $4 WHERE id = $1 RETURNING ${SCHEDULE_COLUMNS}`,
  deleteSchedule: "DELETE FROM schedules WHERE id = $1",
  // The row lock makes the compare-and-set: of two nodes taking the same due time, the second
  // re-checks next_run_at once the first commits and finds nothing. \`before\` is the row as
  // it was (SET expressions read it too): the run is marked only where none was.
  claimScheduleDue: `WITH before AS (
      SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE id = $1 AND enabled AND next_run_at = $2 FOR UPDATE
    ), claimed AS (
      UPDATE schedules s SET next_run_at = $3,
        active_session_id = CASE WHEN s.active_at IS NULL THEN NULL ELSE s.active_session_id END,
        active_node = CASE WHEN s.active_at IS NULL THEN $4 ELSE s.active_node END,
        active_seen_at = CASE WHEN s.active_at IS NULL THEN $5::bigint ELSE s.active_seen_at END,
        active_at = CASE WHEN s.active_at IS NULL THEN $2::bigint ELSE s.active_at END
      FROM before WHERE s.id = before.id
      RETURNING s.id
    )
    SELECT before.* FROM before JOIN claimed USING (id)`,
  beginScheduleRun: `UPDATE schedules SET active_at = $2, active_session_id = NULL, active_node = $3, active_seen_at = $4
    WHERE id = $1 AND active_at IS NULL`,
  setScheduleRunSession: "UPDATE schedules SET active_session_id = $3 WHERE id = $1 AND active_at = $2",
  touchScheduleRuns: "UPDATE schedules SET active_seen_at = $2 WHERE active_node = $1 AND active_at IS NOT NULL",
  // Clears the mark and records the run in one statement, only while the mark is still this run's.
  endScheduleRun: `WITH cleared AS (
      UPDATE schedules SET active_at = NULL, active_session_id = NULL, active_node = NULL, active_seen_at = NULL
      WHERE id = $1 AND active_at = $2 RETURNING id
    )
    INSERT INTO schedule_runs (${RUN_COLUMNS}) SELECT id, $2::bigint, $3::text, $4::text, $5::text, $6::text, $7::text FROM cleared`,
  pruneScheduleRuns: `DELETE FROM schedule_runs WHERE schedule_id = $1 AND id NOT IN (
      SELECT id FROM schedule_runs WHERE schedule_id = $1 ORDER BY at DESC, id DESC LIMIT $2)`,
  // A schedule deleted meanwhile keeps no runs.
  addScheduleRun: `INSERT INTO schedule_runs (${RUN_COLUMNS}) SELECT id, $2::bigint, $3::text, $4::text, $5::text, $6::text, $7::text FROM schedules WHERE id = $1`,
  listScheduleRuns: `SELECT ${RUN_COLUMNS} FROM schedule_runs WHERE schedule_id = $1 ORDER BY at DESC, id DESC LIMIT $2`,

  // The existing row's session when the insert found one (a concurrent insert waits for ours to commit).
  claimWebhookReceipt: `WITH added AS (
      INSERT INTO webhook_receipts (name, delivery_id, session_id, created_at) VALUES ($1, $2, $3, $4)
      ON CONFLICT (name, delivery_id) DO NOTHING RETURNING session_id
    )
    SELECT (SELECT session_id FROM added) AS added, (SELECT session_id FROM webhook_receipts WHERE name = $1 AND delivery_id = $2) AS existing`,
  dropWebhookReceipt: "DELETE FROM webhook_receipts WHERE name = $1 AND delivery_id = $2",

  // The whole batch in one statement: arrays of fields, unnested in order.
  addWebhookDeliveries: `INSERT INTO webhook_deliveries (id, url, secret_env, type, session_id, body, status, next_attempt_at, created_at, updated_at)
    SELECT d.id, d.url, d.secret_env, d.type, d.session_id, d.body, 'pending', d.next_attempt_at, d.created_at, d.created_at
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[])
      AS d (id, url, secret_env, type, session_id, body, next_attempt_at, created_at)
    ON CONFLICT (id) DO NOTHING`,
  dueWebhookDeliveries: `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= $1
    ORDER BY next_attempt_at, id LIMIT $2`,
  nextWebhookDeliveryAt: "SELECT MIN(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'",
  claimWebhookAttempt: `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = $3, updated_at = $4
    WHERE id = $1 AND status = 'pending' AND next_attempt_at = $2 RETURNING ${DELIVERY_COLUMNS}`,
  settleWebhookAttempt: `UPDATE webhook_deliveries SET status = $2, next_attempt_at = $3, last_status = $4, last_error = $5, updated_at = $6,
      delivered_at = CASE WHEN $2 = 'delivered' THEN $6 ELSE delivered_at END
    WHERE id = $1`,
  listWebhookDeliveries: `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE ($1::text IS NULL OR status = $1)
    ORDER BY created_at DESC, pos DESC LIMIT $2`,
  pruneWebhookReceipts: "DELETE FROM webhook_receipts WHERE created_at < $1",
  pruneWebhookDeliveries: "DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < $1",
} as const;
