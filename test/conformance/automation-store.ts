import { describe, expect, it } from "vitest";
import type { NewSchedule, NewWebhookDelivery, ScheduleRunRow, Store } from "../../src/store/store.js";

/**
 * The AutomationStore half of the Store contract (schedules, runs, webhook receipts and
 * deliveries), declared inside storeConformance so every driver runs it.
 */
export function automationConformance(current: () => Store): void {
  const schedule = (id: string, extra: Partial<NewSchedule> = {}): NewSchedule => ({
    id,
    agent: "default",
    prompt: `prompt of ${id}`,
    cron: null,
    every_seconds: 60,
    session: "new",
    enabled: true,
    next_run_at: 1_000_000,
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:00.000Z",
    owner_key: null,
    ...extra,
  });
  const run = (scheduleId: string, at: number, extra: Partial<ScheduleRunRow> = {}): ScheduleRunRow => ({
    schedule_id: scheduleId,
    at,
    session_id: `sess-${at}`,
    status: "ok",
    error: null,
    started_at: "2026-01-01T00:00:00.500Z",
    finished_at: "2026-01-01T00:01:00.000Z",
    ...extra,
  });
  const delivery = (id: string, extra: Partial<NewWebhookDelivery> = {}): NewWebhookDelivery => ({
    id,
    url: "http://127.0.0.1:9/hook",
    secret_env: "HOOK_SECRET",
    type: "chat.done",
    session_id: "s1",
    body: JSON.stringify({ deliveryId: id }),
    next_attempt_at: 5_000,
    created_at: "2026-01-01T00:00:00.000Z",
    ...extra,
  });

  describe("schedules", () => {
    it("creates, reads, lists, enables and deletes schedules", async () => {
      const store = current();
      const created = await store.createSchedule(schedule("sch1", { cron: "*/5 * * * *", every_seconds: null }));
      expect(created).toEqual({ ...schedule("sch1", { cron: "*/5 * * * *", every_seconds: null }), active_at: null, active_session_id: null, active_node: null, active_seen_at: null });
      await store.createSchedule(schedule("sch2", { every_seconds: 1.5, session: "sess-x", owner_key: "key_a" }));
      expect(await store.getSchedule("sch1")).toEqual(created);
      expect((await store.getSchedule("sch2"))?.owner_key).toBe("key_a");
      expect((await store.listSchedules()).map((s) => [s.id, s.every_seconds, s.session])).toEqual([
        ["sch1", null, "new"],
        ["sch2", 1.5, "sess-x"],
      ]);
      const disabled = await store.setScheduleEnabled("sch1", false, 2_000_000, "2026-01-02T00:00:00.000Z");
      expect(disabled).toMatchObject({ enabled: false, next_run_at: 2_000_000, updated_at: "2026-01-02T00:00:00.000Z" });
      expect(await store.setScheduleEnabled("missing", true, 1, "2026-01-02T00:00:00.000Z")).toBeUndefined();
      expect(await store.deleteSchedule("sch1")).toBe(true);
      expect(await store.deleteSchedule("sch1")).toBe(false);
      expect(await store.getSchedule("sch1")).toBeUndefined();
      expect((await store.listSchedules()).map((s) => s.id)).toEqual(["sch2"]);
    });

    it("hands each due time to exactly one claimer, and none while disabled", async () => {
      const store = current();
      await store.createSchedule(schedule("sch1", { next_run_at: 1_000 }));
      const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => store.claimScheduleDue("sch1", 1_000, 61_000, `node-${i}`, 1_001)));
      expect(claims.filter(Boolean)).toHaveLength(1);
      const won = claims.find(Boolean)!;
      expect(won.began).toBe(true);
      expect(won.before).toMatchObject({ next_run_at: 1_000, active_at: null });
      expect(await store.getSchedule("sch1")).toMatchObject({ next_run_at: 61_000, active_at: 1_000, active_node: `node-${claims.indexOf(won)}`, active_seen_at: 1_001, active_session_id: null });
      expect(await store.claimScheduleDue("sch1", 1_000, 121_000, "node-x", 1)).toBeUndefined();
      await store.setScheduleEnabled("sch1", false, 61_000, "2026-01-01T00:00:00.000Z");
      expect(await store.claimScheduleDue("sch1", 61_000, 121_000, "node-x", 1)).toBeUndefined();
      expect(await store.claimScheduleDue("missing", 1, 2, "node-x", 1)).toBeUndefined();
    });

    it("keeps one run in flight: a claim while a run goes on marks nothing and returns that run's mark; its end is recorded once", async () => {
      const store = current();
      await store.createSchedule(schedule("sch1", { next_run_at: 1_000 }));
      expect((await store.claimScheduleDue("sch1", 1_000, 2_000, "node-a", 1_005))?.began).toBe(true);
      expect(await store.beginScheduleRun("sch1", 2_000, "node-b", 2_005)).toBe(false);
      await store.setScheduleRunSession("sch1", 1_000, "sess-1");
      await store.setScheduleRunSession("sch1", 9_999, "sess-wrong");
      const second = await store.claimScheduleDue("sch1", 2_000, 3_000, "node-b", 2_005);
      expect(second?.began).toBe(false);
      expect(second?.before).toMatchObject({ next_run_at: 2_000, active_at: 1_000, active_session_id: "sess-1", active_node: "node-a", active_seen_at: 1_005 });
      expect(await store.getSchedule("sch1")).toMatchObject({ next_run_at: 3_000, active_at: 1_000, active_node: "node-a" });

      expect(await store.endScheduleRun(run("sch1", 2_000), 10)).toBe(false);
      expect(await store.endScheduleRun(run("sch1", 1_000, { session_id: "sess-1" }), 10)).toBe(true);
      expect(await store.endScheduleRun(run("sch1", 1_000, { session_id: "sess-1" }), 10)).toBe(false);
      expect(await store.getSchedule("sch1")).toMatchObject({ active_at: null, active_session_id: null, active_node: null, active_seen_at: null });
      expect(await store.listScheduleRuns("sch1", 10)).toEqual([run("sch1", 1_000, { session_id: "sess-1" })]);
      expect(await store.beginScheduleRun("sch1", 3_000, "node-b", 3_001)).toBe(true);
    });

    it("renews the marks of one node's runs in flight, and only those", async () => {
      const store = current();
      for (const id of ["a1", "a2", "b1", "idle"]) await store.createSchedule(schedule(id, { next_run_at: 1_000 }));
      await store.claimScheduleDue("a1", 1_000, 2_000, "node-a", 1_000);
      await store.claimScheduleDue("a2", 1_000, 2_000, "node-a", 1_000);
      await store.claimScheduleDue("b1", 1_000, 2_000, "node-b", 1_000);
      await store.touchScheduleRuns("node-a", 7_000);
      const seen = Object.fromEntries((await store.listSchedules()).map((s) => [s.id, s.active_seen_at]));
      expect(seen).toEqual({ a1: 7_000, a2: 7_000, b1: 1_000, idle: null });
    });

    it("lists runs newest first, keeps only the newest `keep`, and drops them with the schedule", async () => {
      const store = current();
      await store.createSchedule(schedule("sch1"));
      await store.addScheduleRun(run("sch1", 1_000, { status: "skipped", session_id: null, started_at: null }));
      for (const at of [2_000, 3_000, 4_000]) {
        await store.beginScheduleRun("sch1", at, "n", at);
        await store.endScheduleRun(run("sch1", at, at === 3_000 ? { status: "error", error: "LLM_ERROR: boom" } : {}), 3);
      }
      const runs = await store.listScheduleRuns("sch1", 10);
      expect(runs.map((r) => [r.at, r.status])).toEqual([
        [4_000, "ok"],
        [3_000, "error"],
        [2_000, "ok"],
      ]);
      expect(runs[1]!.error).toBe("LLM_ERROR: boom");
      expect((await store.listScheduleRuns("sch1", 1)).map((r) => r.at)).toEqual([4_000]);
      await store.deleteSchedule("sch1");
      expect(await store.listScheduleRuns("sch1", 10)).toEqual([]);
      await store.addScheduleRun(run("sch1", 5_000, { status: "skipped" }));
      expect(await store.listScheduleRuns("sch1", 10)).toEqual([]);
    });
  });

  describe("webhook receipts", () => {
    it("records the first delivery id per webhook and answers its session to the rest", async () => {
      const store = current();
      const answers = await Promise.all(["s-a", "s-b", "s-c", "s-d"].map((s) => store.claimWebhookReceipt("github", "d1", s, "2026-01-01T00:00:00.000Z")));
      expect(answers.filter((a) => a === null)).toHaveLength(1);
      const winner = ["s-a", "s-b", "s-c", "s-d"][answers.indexOf(null)];
      expect(answers.filter((a) => a !== null)).toEqual([winner, winner, winner]);
      expect(await store.claimWebhookReceipt("other", "d1", "s-e", "2026-01-01T00:00:00.000Z")).toBeNull();
      await store.dropWebhookReceipt("github", "d1");
      expect(await store.claimWebhookReceipt("github", "d1", "s-f", "2026-01-01T00:00:00.000Z")).toBeNull();
    });
  });

  describe("webhook deliveries", () => {
    it("queues each id once, lists due ones, claims an attempt once and settles it", async () => {
      const store = current();
      await store.addWebhookDeliveries([delivery("d1", { next_attempt_at: 5_000 }), delivery("d2", { next_attempt_at: 9_000, created_at: "2026-01-01T00:00:01.000Z" })]);
      await store.addWebhookDeliveries([delivery("d1", { body: "changed", next_attempt_at: 1 })]);
      expect(await store.nextWebhookDeliveryAt()).toBe(5_000);
      expect((await store.dueWebhookDeliveries(4_999, 10)).map((d) => d.id)).toEqual([]);
      const due = await store.dueWebhookDeliveries(10_000, 10);
      expect(due.map((d) => d.id)).toEqual(["d1", "d2"]);
      expect(due[0]).toMatchObject({ body: JSON.stringify({ deliveryId: "d1" }), status: "pending", attempts: 0, last_status: null, delivered_at: null });

      const claims = await Promise.all([1, 2, 3].map(() => store.claimWebhookAttempt("d1", 5_000, 65_000, "2026-01-01T00:00:05.000Z")));
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(claims.find(Boolean)).toMatchObject({ attempts: 1, next_attempt_at: 65_000 });
      await store.settleWebhookAttempt("d1", { status: "pending", next_attempt_at: 7_000, last_status: 500, last_error: "HTTP 500", at: "2026-01-01T00:00:06.000Z" });
      expect(await store.nextWebhookDeliveryAt()).toBe(7_000);
      await store.claimWebhookAttempt("d1", 7_000, 67_000, "2026-01-01T00:00:07.000Z");
      await store.settleWebhookAttempt("d1", { status: "delivered", next_attempt_at: 7_100, last_status: 204, last_error: null, at: "2026-01-01T00:00:07.100Z" });
      expect(await store.nextWebhookDeliveryAt()).toBe(9_000);
      expect((await store.listWebhookDeliveries({ limit: 10 })).map((d) => d.id)).toEqual(["d2", "d1"]);
      const [delivered] = await store.listWebhookDeliveries({ status: "delivered", limit: 10 });
      expect(delivered).toMatchObject({ id: "d1", attempts: 2, last_status: 204, last_error: null, delivered_at: "2026-01-01T00:00:07.100Z" });
      expect(await store.claimWebhookAttempt("d1", 7_100, 1, "x")).toBeUndefined();
    });

    it("prunes old receipts and settled deliveries but never a pending one", async () => {
      const store = current();
      await store.claimWebhookReceipt("gh", "old", "s1", "2026-01-01T00:00:00.000Z");
      await store.claimWebhookReceipt("gh", "new", "s2", "2026-03-01T00:00:00.000Z");
      await store.addWebhookDeliveries([delivery("old-done"), delivery("old-pending"), delivery("new-done", { created_at: "2026-03-01T00:00:00.000Z" })]);
      for (const id of ["old-done", "new-done"]) await store.settleWebhookAttempt(id, { status: "failed", next_attempt_at: 1, last_status: null, last_error: "refused", at: "x" });
      await store.pruneWebhooks("2026-02-01T00:00:00.000Z");
      expect((await store.listWebhookDeliveries({ limit: 10 })).map((d) => d.id).sort()).toEqual(["new-done", "old-pending"]);
      expect(await store.claimWebhookReceipt("gh", "old", "s3", "2026-03-02T00:00:00.000Z")).toBeNull();
      expect(await store.claimWebhookReceipt("gh", "new", "s4", "2026-03-02T00:00:00.000Z")).toBe("s2");
    });
  });
}
