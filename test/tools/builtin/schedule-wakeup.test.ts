import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/base/clock.js";
import { memoryLogger } from "../../../src/base/log.js";
import { WakeupService } from "../../../src/core/wakeups.js";
import { scheduleWakeup } from "../../../src/tools/builtin/schedule-wakeup.js";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";

const START = Date.UTC(2026, 0, 1);
let h: ToolHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function setup() {
  const clock = new ManualClock(START);
  const delivered: { sessionId: string; message: string }[] = [];
  // The harness store is a real SQLite store; delivery is the one parameter (the runtime passes sessions.send).
  const services: Record<string, unknown> = {};
  h = await createToolHarness({ clock, services });
  const service = new WakeupService({
    store: h.store,
    clock,
    log: memoryLogger(),
    minLoopSeconds: () => 10,
    deliver: async (sessionId, message) => void delivered.push({ sessionId, message }),
  });
  services.wakeups = service;
  return { clock, delivered, service, harness: h };
}

describe("schedule_wakeup", () => {
  it("arms a one-shot, reports when it fires, and delivers the message once", async () => {
    const { clock, delivered, service, harness } = await setup();
    const result = await harness.call(scheduleWakeup, { time: "30m", message: "Re-check the deploy status" });
    expect(result.success).toBe(true);
    expect(result.output).toContain(`Wake-up scheduled in 30m, at ${new Date(START + 30 * 60_000).toISOString()}`);
    expect(result.output).toContain('"Re-check the deploy status"');
    expect(await harness.store.getWakeup(harness.sessionId)).toMatchObject({ time: "30m", interval_ms: 1_800_000, loop: false });

    await clock.advance(30 * 60_000);
    await service.idle();
    expect(delivered).toEqual([{ sessionId: harness.sessionId, message: "Re-check the deploy status" }]);
    expect(await service.get(harness.sessionId)).toBeNull();
  });

  it("replaces an existing schedule, loops, and cancels with time 0", async () => {
    const { clock, delivered, harness } = await setup();
    await harness.call(scheduleWakeup, { time: "5", message: "first" });
    const looped = await harness.call(scheduleWakeup, { time: "2h", message: "Poll the queue", loop: true });
    expect(looped.output).toMatch(/^Looping wake-up scheduled every 2h/);
    expect(looped.output).toContain("replaced the previous schedule");
    expect(looped.output).toContain('schedule_wakeup({ time: "0" })');

    await clock.advance(4 * 3_600_000);
    await (harness.context().services.wakeups as WakeupService).idle();
    expect(delivered.map((d) => d.message)).toEqual(["Poll the queue", "Poll the queue"]);

    const cancelled = await harness.call(scheduleWakeup, { time: "0" });
    expect(cancelled.output).toBe("Wake-up cancelled; no schedule remains for this session.");
    expect(await harness.store.getWakeup(harness.sessionId)).toBeUndefined();
    const again = await harness.call(scheduleWakeup, { time: "0" });
    expect(again.output).toBe("No wake-up was scheduled; nothing to cancel.");
  });

  it("answers bad input with errors the model can act on", async () => {
    const { harness } = await setup();
    expect((await harness.call(scheduleWakeup, { time: "30m" })).output).toMatch(/^Error: VALIDATION_ERROR — message is required when time > 0/);
    expect((await harness.call(scheduleWakeup, { time: "-3m", message: "x" })).output).toMatch(/^Error: VALIDATION_ERROR — .*negative/);
    expect((await harness.call(scheduleWakeup, { time: "tomorrow", message: "x" })).output).toMatch(/^Error: VALIDATION_ERROR — time "tomorrow" is not a delay/);
    expect((await harness.call(scheduleWakeup, { time: "1000h", message: "x" })).output).toMatch(/^Error: VALIDATION_ERROR — .*30 days/);
    expect((await harness.call(scheduleWakeup, { time: "5s", message: "x", loop: true })).output).toMatch(/^Error: VALIDATION_ERROR — a looping wake-up must be at least 10s apart/);
    expect((await harness.call(scheduleWakeup, { message: "x" })).output).toMatch(/^Error: VALIDATION_ERROR/);
    expect(await harness.store.getWakeup(harness.sessionId)).toBeUndefined();
  });

  it("says so when the runtime has no wake-up service", async () => {
    h = await createToolHarness();
    const result = await h.call(scheduleWakeup, { time: "5m", message: "x" });
    expect(result.output).toMatch(/^Error: TOOL_CONTEXT_INVALID — /);
  });
});
