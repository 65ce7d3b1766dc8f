import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import type { EventBus, EventFilter, VeilEvent } from "../../src/base/events.js";
import { nextLoopTime, parseWakeupTime, WakeupService } from "../../src/core/wakeups.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";

const MIN = 60_000;
const START = Date.UTC(2026, 0, 1);

const harnesses: RuntimeHarness[] = [];
afterEach(async () => {
  // Close in reverse: a restarted runtime shares the first one's workspace.
  for (const h of harnesses.splice(0).reverse()) await h.close();
});

async function harness(clock: ManualClock, extra: Parameters<typeof createRuntimeHarness>[0] = {}): Promise<RuntimeHarness> {
  const h = await createRuntimeHarness({ clock, ...extra });
  harnesses.push(h);
  return h;
}

function wakeups(h: RuntimeHarness): WakeupService {
  const service = h.runtime.services.wakeups;
  if (!(service instanceof WakeupService)) throw new Error("wake-up service not installed");
  return service;
}

function nextEvent(bus: EventBus, filter: EventFilter, predicate: (e: VeilEvent) => boolean = () => true): Promise<VeilEvent> {
  return new Promise((resolve) => {
    const off = bus.subscribe(filter, (event) => {
      if (predicate(event)) {
        off();
        resolve(event);
      }
    });
  });
}

async function userMessages(h: RuntimeHarness, sessionId: string): Promise<{ content: string | null; meta: unknown }[]> {
  return (await h.runtime.store.listMessages(sessionId)).filter((m) => m.role === "user").map((m) => ({ content: m.content, meta: m.meta }));
}

describe("parseWakeupTime", () => {
  it("reads the documented forms and bare minutes, and rejects the rest clearly", () => {
    expect(parseWakeupTime("30m")).toBe(30 * MIN);
    expect(parseWakeupTime("90s")).toBe(90_000);
    expect(parseWakeupTime("2h")).toBe(2 * 60 * MIN);
    expect(parseWakeupTime("5")).toBe(5 * MIN);
    expect(parseWakeupTime("0.5")).toBe(30_000);
    expect(parseWakeupTime(" 1.5h ")).toBe(90 * MIN);
    expect(parseWakeupTime("0")).toBe(0);
    expect(() => parseWakeupTime("-5")).toThrow(/negative/);
    expect(() => parseWakeupTime("soon")).toThrow(/not a delay/);
    expect(() => parseWakeupTime("5 fortnights")).toThrow(/unknown unit/);
    expect(() => parseWakeupTime("31d")).toThrow(/30 days/);
    expect(() => parseWakeupTime("1e9")).toThrow();
  });

  it("computes the next loop time on the grid, skipping missed periods", () => {
    expect(nextLoopTime(1000, 100, 1000)).toBe(1100);
    expect(nextLoopTime(1000, 100, 1099)).toBe(1100);
    expect(nextLoopTime(1000, 100, 1100)).toBe(1200);
    expect(nextLoopTime(1000, 100, 1550)).toBe(1600);
  });
});

describe("wake-ups in a runtime", () => {
  it("fires after the delay and starts a turn with the message as a user message from the wake-up", async () => {
    const clock = new ManualClock(START);
    const h = await harness(clock);
    h.llm.enqueue(reply().text("checked the deploy").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const info = await wakeups(h).arm(session.id, { time: "30s", message: "Re-check the deploy status" });
    expect(info).toEqual({ time: "30s", message: "Re-check the deploy status", loop: false, nextFireAt: new Date(START + 30_000).toISOString(), intervalMs: 30_000 });

    await clock.advance(29_000);
    await wakeups(h).idle();
    expect(h.llm.completionRequests).toHaveLength(0);

    const done = nextEvent(h.runtime.bus, { sessionId: session.id, types: ["chat.done"] });
    await clock.advance(1_000);
    expect(await done).toMatchObject({ content: "checked the deploy", stopReason: "stop" });
    expect(h.llm.completionRequests[0]!.body.messages.at(-1)).toMatchObject({ role: "user", content: "Re-check the deploy status" });
    expect(await userMessages(h, session.id)).toEqual([{ content: "Re-check the deploy status", meta: { source: "wakeup" } }]);
    // A one-shot is gone once fired.
    expect(await wakeups(h).get(session.id)).toBeNull();
    expect(await h.runtime.store.getWakeup(session.id)).toBeUndefined();
    await clock.advance(60 * MIN);
    await wakeups(h).idle();
    expect(h.llm.completionRequests).toHaveLength(1);
  });

  it("the model arms a wake-up with the schedule_wakeup tool and is woken by it later", async () => {
    const clock = new ManualClock(START);
    const h = await harness(clock);
    h.llm.enqueue(reply().tool("schedule_wakeup", { time: "15m", message: "Time to look again" }).stop());
    h.llm.enqueue(reply().text("I will look again in 15 minutes.").stop());
    h.llm.enqueue(reply().text("Looking again.").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const first = await (await h.runtime.sessions.send(session.id, "watch this")).result;
    expect(first.content).toBe("I will look again in 15 minutes.");
    expect(h.llm.completionRequests[1]!.body.messages.at(-1).content).toMatch(/^Wake-up scheduled in 15m/);
    expect(await wakeups(h).get(session.id)).toMatchObject({ message: "Time to look again" });

    const done = nextEvent(h.runtime.bus, { sessionId: session.id, types: ["chat.done"] });
    await clock.advance(15 * MIN);
    expect(await done).toMatchObject({ content: "Looking again." });
    expect(h.llm.completionRequests[2]!.body.messages.at(-1)).toMatchObject({ role: "user", content: "Time to look again" });
  });

  it("arming replaces the previous schedule, and time 0 cancels", async () => {
    const clock = new ManualClock(START);
    const h = await harness(clock);
    h.llm.respond(() => reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const service = wakeups(h);
    await service.arm(session.id, { time: "10m", message: "first" });
    await service.arm(session.id, { time: "5m", message: "second" });
    expect(service.armedCount()).toBe(1);

    const done = nextEvent(h.runtime.bus, { sessionId: session.id, types: ["chat.done"] });
    await clock.advance(5 * MIN);
    await done;
    await clock.advance(30 * MIN);
    await service.idle();
    expect((await userMessages(h, session.id)).map((m) => m.content)).toEqual(["second"]);

    await service.arm(session.id, { time: "2m", message: "never" });
    expect(await service.arm(session.id, { time: "0" })).toBeNull();
    expect(await service.get(session.id)).toBeNull();
    expect(service.armedCount()).toBe(0);
    await clock.advance(10 * MIN);
    await service.idle();
    expect(h.llm.completionRequests).toHaveLength(1);
    expect(await service.cancel(session.id)).toBe(false);
  });

  it("validates: message required, loop not below settings.wakeup.minLoopSeconds, unknown and closed sessions", async () => {
    const clock = new ManualClock(START);
    const h = await harness(clock, { settings: { wakeup: { minLoopSeconds: 60 } } });
    const session = await h.runtime.sessions.create({ agent: "default" });
    const service = wakeups(h);
    await expect(service.arm(session.id, { time: "5m" })).rejects.toMatchObject({ code: "VALIDATION_ERROR", message: expect.stringMatching(/message is required/) });
    await expect(service.arm(session.id, { time: "30s", message: "x", loop: true })).rejects.toMatchObject({ code: "VALIDATION_ERROR", message: expect.stringMatching(/at least 1m/) });
    await expect(service.arm(session.id, { time: "30s", message: "once is fine" })).resolves.toMatchObject({ loop: false });
    await expect(service.arm("sess_missing", { time: "5m", message: "x" })).rejects.toMatchObject({ code: "SESSION_NOT_FOUND" });
    await h.runtime.sessions.close(session.id);
    await expect(service.arm(session.id, { time: "5m", message: "x" })).rejects.toMatchObject({ code: "SESSION_CLOSED" });
  });

  it("a looping wake-up re-arms from its due time and fires every period", async () => {
    const clock = new ManualClock(START);
    const h = await harness(clock);
    h.llm.respond(() => reply().text("polled").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const service = wakeups(h);
    await service.arm(session.id, { time: "1m", message: "Poll the queue", loop: true });

    for (let i = 1; i <= 3; i++) {
      const done = nextEvent(h.runtime.bus, { sessionId: session.id, types: ["chat.done"] });
      await clock.advance(MIN);
      await done;
      expect(await service.get(session.id)).toMatchObject({ loop: true, nextFireAt: new Date(START + (i + 1) * MIN).toISOString() });
    }
    expect((await userMessages(h, session.id)).map((m) => m.content)).toEqual(["Poll the queue", "Poll the queue", "Poll the queue"]);
  });

  it("a message that fires mid-run is injected at the next boundary of that run", async () => {
    const clock = new ManualClock(START);
    const h = await harness(clock);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    h.llm.enqueue(reply().waitFor(gate).tool("log_write", { message: "working" }).stop());
    h.llm.enqueue(reply().text("saw the wake-up").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await wakeups(h).arm(session.id, { time: "1m", message: "wake up" });
    const receipt = await h.runtime.sessions.send(session.id, "start working");
    await h.llm.waitForRequests(1);
    await clock.advance(MIN);
    await wakeups(h).idle();
    release();
    expect((await receipt.result).content).toBe("saw the wake-up");
    const messages = h.llm.completionRequests[1]!.body.messages;
    expect(messages.at(-1)).toMatchObject({ role: "user", content: "wake up" });
    expect(h.llm.completionRequests).toHaveLength(2);
  });

  it("a suspended session keeps its timer and gets one message when resumed, even after many missed loop periods", async () => {
    const clock = new ManualClock(START);
    const h = await harness(clock);
    h.llm.respond(() => reply().text("back").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const service = wakeups(h);
    await service.arm(session.id, { time: "1m", message: "loop tick", loop: true });
    await h.runtime.sessions.suspend(session.id);

    await clock.advance(5 * MIN + 30_000);
    await service.idle();
    expect(h.llm.completionRequests).toHaveLength(0);
    expect(await service.get(session.id)).not.toBeNull();

    const done = nextEvent(h.runtime.bus, { sessionId: session.id, types: ["chat.done"] });
    await h.runtime.sessions.resume(session.id);
    await done;
    await service.idle();
    expect((await userMessages(h, session.id)).map((m) => m.content)).toEqual(["loop tick"]);
    // The next period is on the original grid, after now (START + 5m30s).
    expect(await service.get(session.id)).toMatchObject({ nextFireAt: new Date(START + 6 * MIN).toISOString() });

    const again = nextEvent(h.runtime.bus, { sessionId: session.id, types: ["chat.done"] });
    await clock.advance(30_000);
    await again;
    expect(await userMessages(h, session.id)).toHaveLength(2);
  });

  it("a one-shot that came due while suspended is delivered once on resume and then gone", async () => {
    const clock = new ManualClock(START);
    const h = await harness(clock);
    h.llm.respond(() => reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const service = wakeups(h);
    await service.arm(session.id, { time: "2m", message: "one shot" });
    await h.runtime.sessions.suspend(session.id);
    await clock.advance(10 * MIN);
    await service.idle();
    expect(h.llm.completionRequests).toHaveLength(0);

    const done = nextEvent(h.runtime.bus, { sessionId: session.id, types: ["chat.done"] });
    await h.runtime.sessions.resume(session.id);
    await done;
    // A second resume (no-op) and more time deliver nothing more.
    await h.runtime.sessions.resume(session.id);
    await clock.advance(10 * MIN);
    await service.idle();
    expect((await userMessages(h, session.id)).map((m) => m.content)).toEqual(["one shot"]);
    expect(await service.get(session.id)).toBeNull();
  });

  it("closing a session drops its schedule and stops a loop", async () => {
    const clock = new ManualClock(START);
    const h = await harness(clock);
    const session = await h.runtime.sessions.create({ agent: "default" });
    const service = wakeups(h);
    await service.arm(session.id, { time: "1m", message: "tick", loop: true });
    await h.runtime.sessions.close(session.id);
    expect(await h.runtime.store.getWakeup(session.id)).toBeUndefined();
    expect(service.armedCount()).toBe(0);
    await clock.advance(10 * MIN);
    await service.idle();
    expect(h.llm.completionRequests).toHaveLength(0);
  });

  it("a wall clock that jumps forward fires once and skips the periods it jumped over", async () => {
    const clock = new ManualClock(START);
    const h = await harness(clock);
    h.llm.respond(() => reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const service = wakeups(h);
    await service.arm(session.id, { time: "10m", message: "tick", loop: true });

    clock.jumpWall(35 * MIN);
    const done = nextEvent(h.runtime.bus, { sessionId: session.id, types: ["chat.done"] });
    await clock.advance(10 * MIN); // wall: START + 45m; due START + 10m
    await done;
    await service.idle();
    expect(await userMessages(h, session.id)).toHaveLength(1);
    expect(await service.get(session.id)).toMatchObject({ nextFireAt: new Date(START + 50 * MIN).toISOString() });

    const second = nextEvent(h.runtime.bus, { sessionId: session.id, types: ["chat.done"] });
    await clock.advance(5 * MIN);
    await second;
    expect(await userMessages(h, session.id)).toHaveLength(2);
  });

  it("a wall clock that jumps back makes the timer wait the rest instead of firing early or twice", async () => {
    const clock = new ManualClock(START);
    const h = await harness(clock);
    h.llm.respond(() => reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const service = wakeups(h);
    await service.arm(session.id, { time: "10m", message: "later" });

    clock.jumpWall(-30 * MIN);
    await clock.advance(10 * MIN); // the timer fires; wall is START - 20m, the due time is START + 10m
    await service.idle();
    expect(h.llm.completionRequests).toHaveLength(0);
    expect(service.armedCount()).toBe(1);

    const done = nextEvent(h.runtime.bus, { sessionId: session.id, types: ["chat.done"] });
    await clock.advance(30 * MIN);
    await done;
    await clock.advance(60 * MIN);
    await service.idle();
    expect((await userMessages(h, session.id)).map((m) => m.content)).toEqual(["later"]);
  });

  it("a restart keeps schedules; an overdue one fires exactly once shortly after start", async () => {
    const clock = new ManualClock(START);
    const first = await harness(clock);
    const session = await first.runtime.sessions.create({ agent: "default" });
    const other = await first.runtime.sessions.create({ agent: "default" });
    await wakeups(first).arm(session.id, { time: "10m", message: "overdue one-shot" });
    await wakeups(first).arm(other.id, { time: "10m", message: "overdue loop", loop: true });
    await first.runtime.close();

    await clock.advance(65 * MIN); // the server is down for over an hour
    const second = await harness(clock, { workspace: first.ws.root });
    second.llm.respond(() => reply().text("ok").stop());
    expect(second.runtime.store).not.toBe(first.runtime.store);
    expect(await wakeups(second).get(session.id)).toMatchObject({ message: "overdue one-shot" });

    const doneA = nextEvent(second.runtime.bus, { sessionId: session.id, types: ["chat.done"] });
    const doneB = nextEvent(second.runtime.bus, { sessionId: other.id, types: ["chat.done"] });
    await clock.advance(1_000);
    expect(await Promise.all([doneA, doneB])).toMatchObject([{ stopReason: "stop" }, { stopReason: "stop" }]);
    await clock.advance(4 * MIN);
    await wakeups(second).idle();

    expect((await userMessages(second, session.id)).map((m) => m.content)).toEqual(["overdue one-shot"]);
    expect((await userMessages(second, other.id)).map((m) => m.content)).toEqual(["overdue loop"]);
    expect(await wakeups(second).get(session.id)).toBeNull();
    // The loop was due at START+10m; the next grid time after START+65m1s is START+70m.
    expect(await wakeups(second).get(other.id)).toMatchObject({ nextFireAt: new Date(START + 70 * MIN).toISOString() });
    expect(second.llm.completionRequests).toHaveLength(2);
  });
});
