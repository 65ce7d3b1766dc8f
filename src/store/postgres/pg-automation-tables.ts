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
import { PgSideTables } from "./pg-side-tables.js";

/**
 * The tables of AutomationStore (store/automation.ts) on the pool. None of them belongs to a
 * session's lease: they are written directly, also through a fenced view.
 */
export abstract class PgAutomationTables extends PgSideTables implements AutomationStore {
  async createSchedule(row: NewSchedule): Promise<ScheduleRow> {
    const { rows } = await this.direct(`schedule ${row.id}`, undefined, (on) =>
      on.run<ScheduleRow>("insertSchedule", [row.id, row.agent, row.prompt, row.cron, row.every_seconds, row.session, row.enabled, row.next_run_at, row.created_at, row.updated_at, row.owner_key]),
    );
    return rows[0]!;
  }

  async getSchedule(id: string): Promise<ScheduleRow | undefined> {
    const { rows } = await this.direct("get schedule", undefined, (on) => on.run<ScheduleRow>("getSchedule", [id]));
    return rows[0];
  }

  async listSchedules(): Promise<ScheduleRow[]> {
    const { rows } = await this.direct("list schedules", undefined, (on) => on.run<ScheduleRow>("listSchedules", []));
    return rows;
  }

  async setScheduleEnabled(id: string, enabled: boolean, nextRunAt: number, at: string): Promise<ScheduleRow | undefined> {
    const { rows } = await this.direct("enable schedule", undefined, (on) => on.run<ScheduleRow>("setScheduleEnabled", [id, enabled, nextRunAt, at]));
    return rows[0];
  }

  async deleteSchedule(id: string): Promise<boolean> {
    const result = await this.direct("delete schedule", undefined, (on) => on.run("deleteSchedule", [id]));
    return result.rowCount !== 0;
  }

  async claimScheduleDue(id: string, dueAt: number, nextRunAt: number, nodeId: string, startedAt: number): Promise<{ before: ScheduleRow; began: boolean } | undefined> {
    const { rows } = await this.direct("claim schedule", undefined, (on) => on.run<ScheduleRow>("claimScheduleDue", [id, dueAt, nextRunAt, nodeId, startedAt]));
    return rows[0] && { before: rows[0], began: rows[0].active_at === null };
  }

  async beginScheduleRun(id: string, dueAt: number, nodeId: string, startedAt: number): Promise<boolean> {
    const result = await this.direct("begin schedule run", undefined, (on) => on.run("beginScheduleRun", [id, dueAt, nodeId, startedAt]));
    return result.rowCount === 1;
  }

  async touchScheduleRuns(nodeId: string, at: number): Promise<void> {
    await this.direct("touch schedule runs", undefined, (on) => on.run("touchScheduleRuns", [nodeId, at]));
  }

  async setScheduleRunSession(id: string, dueAt: number, sessionId: string): Promise<void> {
    await this.direct("schedule run session", sessionId, (on) => on.run("setScheduleRunSession", [id, dueAt, sessionId]));
  }

  async endScheduleRun(run: ScheduleRunRow, keep: number): Promise<boolean> {
    return this.direct("end schedule run", run.session_id ?? undefined, (on) =>
      on.transaction(async (tx) => {
        const ended = await tx.run("endScheduleRun", [run.schedule_id, run.at, run.session_id, run.status, run.error, run.started_at, run.finished_at]);
        if (ended.rowCount === 0) return false;
        await tx.run("pruneScheduleRuns", [run.schedule_id, keep]);
        return true;
      }),
    );
  }

  async addScheduleRun(run: ScheduleRunRow): Promise<void> {
    await this.direct("add schedule run", undefined, (on) => on.run("addScheduleRun", [run.schedule_id, run.at, run.session_id, run.status, run.error, run.started_at, run.finished_at]));
  }

  async listScheduleRuns(scheduleId: string, limit: number): Promise<ScheduleRunRow[]> {
    const { rows } = await this.direct("list schedule runs", undefined, (on) => on.run<ScheduleRunRow>("listScheduleRuns", [scheduleId, limit]));
    return rows;
  }

  async claimWebhookReceipt(name: string, deliveryId: string, sessionId: string, at: string): Promise<string | null> {
    return this.direct("webhook receipt", undefined, async (on) => {
      const { rows } = await on.run<{ added: string | null; existing: string | null }>("claimWebhookReceipt", [name, deliveryId, sessionId, at]);
      if (rows[0]?.added) return null;
      if (rows[0]?.existing) return rows[0].existing;
      // The first insert committed after this statement's snapshot was taken: read it now.
      const again = await on.sql<{ session_id: string }>("SELECT session_id FROM webhook_receipts WHERE name = $1 AND delivery_id = $2", [name, deliveryId]);
      return again.rows[0]?.session_id ?? null;
    });
  }

  async dropWebhookReceipt(name: string, deliveryId: string): Promise<void> {
    await this.direct("drop webhook receipt", undefined, (on) => on.run("dropWebhookReceipt", [name, deliveryId]));
  }

  async addWebhookDeliveries(rows: readonly NewWebhookDelivery[]): Promise<void> {
    if (rows.length === 0) return;
    const column = <K extends keyof NewWebhookDelivery>(key: K) => rows.map((row) => row[key]);
    await this.direct("add webhook deliveries", undefined, (on) =>
      on.run("addWebhookDeliveries", [column("id"), column("url"), column("secret_env"), column("type"), column("session_id"), column("body"), column("next_attempt_at"), column("created_at")]),
    );
  }

  async dueWebhookDeliveries(now: number, limit: number): Promise<WebhookDeliveryRow[]> {
    const { rows } = await this.direct("due webhook deliveries", undefined, (on) => on.run<WebhookDeliveryRow>("dueWebhookDeliveries", [now, limit]));
    return rows;
  }

  async nextWebhookDeliveryAt(): Promise<number | null> {
    const { rows } = await this.direct("next webhook delivery", undefined, (on) => on.run<{ at: number | null }>("nextWebhookDeliveryAt", []));
    return rows[0]?.at ?? null;
  }

  async claimWebhookAttempt(id: string, dueAt: number, holdUntil: number, at: string): Promise<WebhookDeliveryRow | undefined> {
    const { rows } = await this.direct("claim webhook attempt", undefined, (on) => on.run<WebhookDeliveryRow>("claimWebhookAttempt", [id, dueAt, holdUntil, at]));
    return rows[0];
  }

  async settleWebhookAttempt(id: string, outcome: WebhookAttemptOutcome): Promise<void> {
    await this.direct("settle webhook attempt", undefined, (on) =>
      on.run("settleWebhookAttempt", [id, outcome.status, outcome.next_attempt_at, outcome.last_status, outcome.last_error, outcome.at]),
    );
  }

  async listWebhookDeliveries(filter: { status?: WebhookDeliveryStatus; limit: number }): Promise<WebhookDeliveryRow[]> {
    const { rows } = await this.direct("list webhook deliveries", undefined, (on) => on.run<WebhookDeliveryRow>("listWebhookDeliveries", [filter.status ?? null, filter.limit]));
    return rows;
  }

  async pruneWebhooks(before: string): Promise<void> {
    await this.direct("prune webhooks", undefined, async (on) => {
      await on.run("pruneWebhookReceipts", [before]);
      await on.run("pruneWebhookDeliveries", [before]);
    });
  }
}
