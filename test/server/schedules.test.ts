import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import type { VeilEvent } from "../../src/base/events.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { SHELLS_KEY } from "../../src/tools/shared/shell/shell-manager.js";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness | undefined;
const extra: Runtime[] = [];
afterEach(async () => {
  for (const runtime of extra.splice(0)) await runtime.close();
  await h?.close();
  h = undefined;
});

type Server = Awaited<ReturnType<RuntimeHarness["serve"]>>;

async function setup(options: Parameters<typeof createRuntimeHarness>[0] = {}) {
  h = await createRuntimeHarness(options);
  const server = await h.serve();
  return { h, server };
}

const send = async (server: Server, path: string, method: string, body?: unknown) => {
  const res = await server.fetch(path, { method, ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }) });
  return { status: res.status, body: (await res.json()) as any };
};

/** Resolves with the first `n` chat.done events of sessions other than `except`. */
function chatDones(runtime: Runtime, n: number): Promise<VeilEvent[]> {
  const seen: VeilEvent[] = [];
  return new Promise((resolve) => {
    const off = runtime.bus.subscribe({ types: ["chat.done"] }, (event) => {
      seen.push(event);
      if (seen.length === n) {
        off();
        resolve(seen);
      }
    });
  });
}

/** Resolves once the schedule's stored runs satisfy `test` (checked after each stored run). */
async function runsWhere(runtime: Runtime, id: string, test: (runs: any[]) => boolean): Promise<any[]> {
  for (;;) {
    const runs = await runtime.schedules.runs(id, 1000);
    if (test(runs)) return runs;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("POST /schedules (manual clock)", () => {
  it("fires an everySeconds schedule once a second, each run in a new session, and lists the runs", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 0, 0, 0, 250));
    const { h, server } = await setup({ clock });
    h.llm.respond(() => reply().text("tock").stop());
    const before = clock.now();
    const created = await send(server, "/schedules", "POST", { agent: "default", prompt: "tick", everySeconds: 1 });
    expect(created.status).toBe(201);
    const schedule = created.body;
    expect(schedule).toMatchObject({ agent: "default", prompt: "tick", cron: null, everySeconds: 1, session: "new", enabled: true, running: null });
    expect(schedule.id).toMatch(/^sch_/);
    const firstDue = Date.parse(schedule.nextRunAt);
    expect(firstDue).toBe(before + 1000);

    for (let i = 0; i < 2; i++) {
      const done = chatDones(h.runtime, 1);
      await clock.advance(1000);
      await done;
      // The run is over (its end recorded) before the next due time, which would otherwise be skipped.
      await h.runtime.schedules.idle();
    }
    const disabled = await send(server, `/schedules/${schedule.id}`, "PATCH", { enabled: false });
    expect(disabled.body).toMatchObject({ id: schedule.id, enabled: false, nextRunAt: null });
    await h.runtime.schedules.idle();

    const { body } = await send(server, `/schedules/${schedule.id}/runs`, "GET");
    const runs = body.runs as { at: string; sessionId: string; status: string }[];
    // Newest first, on the one-second grid from the first due time, one session each.
    expect(runs.map((r) => [r.at, r.status])).toEqual([
      [new Date(firstDue + 1000).toISOString(), "ok"],
      [new Date(firstDue).toISOString(), "ok"],
    ]);
    expect(new Set(runs.map((r) => r.sessionId)).size).toBe(runs.length);
    expect(h.llm.completionRequests).toHaveLength(runs.length);
    for (const run of runs) {
      const [message] = await h.runtime.store.listMessages(run.sessionId);
      expect(message).toMatchObject({ role: "user", content: "tick", meta: { source: "schedule", scheduleId: schedule.id } });
      expect((await h.runtime.store.getSession(run.sessionId))?.status).toBe("idle");
    }
    // A scheduled run's session is let go of when its run ends: it holds no live slot.
    expect(h.runtime.sessions.isRunning(runs[0]!.sessionId)).toBe(false);
    // Disabled, it fires no more.
    await clock.advance(3000);
    expect(h.llm.completionRequests).toHaveLength(2);

    const listed = await send(server, "/schedules", "GET");
    expect(listed.body.schedules.map((s: { id: string }) => s.id)).toEqual([schedule.id]);
    expect((await send(server, `/schedules/${schedule.id}`, "GET")).body).toMatchObject({ enabled: false, nextRunAt: null });
    const removed = await send(server, `/schedules/${schedule.id}`, "DELETE");
    expect(removed).toEqual({ status: 200, body: { ok: true, id: schedule.id } });
    expect((await send(server, `/schedules/${schedule.id}`, "GET")).body.error.code).toBe("SCHEDULE_NOT_FOUND");
  });

  it("records a due time as skipped while the previous run still goes", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const { h, server } = await setup({ clock });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    h.llm.respond((request) => (h!.llm.completionRequests.indexOf(request) === 0 ? reply().waitFor(held).text("slow").stop() : reply().text("quick").stop()));
    const { body: schedule } = await send(server, "/schedules", "POST", { agent: "default", prompt: "work", everySeconds: 1 });
    await clock.advance(1000);
    await h.llm.waitForRequests(1);
    await clock.advance(1000);
    await clock.advance(1000);
    const whileHeld = await runsWhere(h.runtime, schedule.id, (runs) => runs.filter((r) => r.status === "skipped").length >= 2);
    expect(h.llm.completionRequests).toHaveLength(1);
    const running = (await send(server, `/schedules/${schedule.id}`, "GET")).body.running;
    expect(running).toEqual({ at: new Date(Date.parse(schedule.nextRunAt)).toISOString(), sessionId: expect.stringMatching(/^sess_/) });
    expect(whileHeld.map((r) => r.at)).toEqual([2000, 1000].map((ms) => new Date(Date.parse(schedule.nextRunAt) + ms).toISOString()));
    for (const skipped of whileHeld) expect(skipped).toMatchObject({ status: "skipped", sessionId: null, error: expect.stringContaining("still going") });
    release();
    const after = await runsWhere(h.runtime, schedule.id, (runs) => runs.some((r) => r.status === "ok" && r.sessionId === running.sessionId));
    await send(server, `/schedules/${schedule.id}`, "PATCH", { enabled: false });
    await h.runtime.schedules.idle();
    const first = after.find((r) => r.sessionId === running.sessionId);
    expect(first.at).toBe(running.at);
    expect((await send(server, `/schedules/${schedule.id}`, "GET")).body.running).toBeNull();
  });

  it("sends every run into the schedule's own session when one is named", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const { h, server } = await setup({ clock });
    h.llm.respond(() => reply().text("noted").stop());
    const { body: session } = await send(server, "/sessions", "POST", { agent: "default" });
    const { body: schedule } = await send(server, "/schedules", "POST", { agent: "default", prompt: "status?", everySeconds: 1, session: session.id });
    expect(schedule.session).toBe(session.id);
    for (let i = 0; i < 2; i++) {
      const done = chatDones(h.runtime, 1);
      await clock.advance(1000);
      await done;
      // The run is over (its end recorded) before the next due time, which would otherwise be skipped.
      await h.runtime.schedules.idle();
    }
    await send(server, `/schedules/${schedule.id}`, "PATCH", { enabled: false });
    await h.runtime.schedules.idle();
    const runs = (await send(server, `/schedules/${schedule.id}/runs`, "GET")).body.runs;
    expect(runs).toHaveLength(2);
    expect(runs.every((r: { sessionId: string; status: string }) => r.sessionId === session.id && r.status === "ok")).toBe(true);
    const users = (await h.runtime.store.listMessages(session.id)).filter((m) => m.role === "user");
    expect(users.map((m) => m.content)).toEqual(["status?", "status?"]);
  });

  it("stops a schedule whose session was closed, recording that run as an error", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const { h, server } = await setup({ clock });
    h.llm.respond(() => reply().text("ok").stop());
    const { body: session } = await send(server, "/sessions", "POST", { agent: "default" });
    const { body: schedule } = await send(server, "/schedules", "POST", { agent: "default", prompt: "ping", everySeconds: 1, session: session.id });
    await send(server, `/sessions/${session.id}`, "DELETE");
    await clock.advance(1000);
    const runs = await runsWhere(h.runtime, schedule.id, (all) => all.length > 0);
    expect(runs[0]).toMatchObject({ status: "error", sessionId: session.id, error: expect.stringMatching(/^SESSION_CLOSED: /) });
    await h.runtime.schedules.idle();
    expect((await send(server, `/schedules/${schedule.id}`, "GET")).body).toMatchObject({ enabled: false, nextRunAt: null });
    expect(h.llm.completionRequests).toHaveLength(0);
  });
});

describe("scheduled runs' cost", () => {
  it("starts no shell ahead of a scheduled run's first bash call, where a chat's run starts one", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const { h } = await setup({ clock });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    h.llm.respond(() => reply().waitFor(held).text("done").stop());
    const chatted = await h.runtime.sessions.create({ agent: "default" });
    const chat = await h.runtime.sessions.send(chatted.id, "a chat");
    const schedule = await h.runtime.schedules.create({ agent: "default", prompt: "scheduled", everySeconds: 1 });
    await clock.advance(1000);
    await h.llm.waitForRequests(2);
    const scheduled = (await h.runtime.schedules.get(schedule.id)).running!.sessionId!;
    // Both model requests are out and held: the chat's warm-up has started its shell.
    while (!h.runtime.sessions.sessionResources(chatted.id).peek(SHELLS_KEY)) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(h.runtime.sessions.sessionResources(scheduled).peek(SHELLS_KEY)).toBeUndefined();
    await h.runtime.schedules.setEnabled(schedule.id, false);
    release();
    await chat.result;
    await h.runtime.schedules.idle();
  });
});

describe("schedules.maxConcurrentRuns", () => {
  it("takes due times at once but runs at most that many at a time; the rest wait for a place, not skipped", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const { h } = await setup({ clock, settings: { schedules: { maxConcurrentRuns: 1 } } });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    h.llm.respond((request) => (h!.llm.completionRequests.indexOf(request) === 0 ? reply().waitFor(held).text("first").stop() : reply().text("later").stop()));
    const a = await h.runtime.schedules.create({ agent: "default", prompt: "a", everySeconds: 1 });
    const b = await h.runtime.schedules.create({ agent: "default", prompt: "b", everySeconds: 1 });
    await clock.advance(1000);
    await h.llm.waitForRequests(1);
    await h.runtime.schedules.whenRunsWaiting(1);
    // Both due times are taken; one runs, the other waits for the place (no session yet).
    const [ra, rb] = [(await h.runtime.schedules.get(a.id)).running, (await h.runtime.schedules.get(b.id)).running];
    expect(ra && rb).toBeTruthy();
    expect([ra!.sessionId, rb!.sessionId].filter(Boolean)).toHaveLength(1);
    expect(h.llm.completionRequests).toHaveLength(1);
    await h.runtime.schedules.setEnabled(a.id, false);
    await h.runtime.schedules.setEnabled(b.id, false);
    // The wait for the place takes time, so the second run's start is seen to come after its taking.
    await clock.advance(10);
    release();
    await h.runtime.schedules.idle();
    const runs = [...(await h.runtime.schedules.runs(a.id)), ...(await h.runtime.schedules.runs(b.id))];
    expect(runs.filter((r) => r.status === "ok")).toHaveLength(2);
    const [first, second] = runs.filter((r) => r.status === "ok").sort((x, y) => Date.parse(x.finishedAt) - Date.parse(y.finishedAt));
    // The second was taken at its due time, then waited: it began only after the first ended.
    const began = (await h.runtime.store.listMessages(second!.sessionId!))[0]!.created_at;
    expect(Date.parse(began)).toBeGreaterThanOrEqual(Date.parse(first!.finishedAt) - 5);
    expect(Date.parse(second!.startedAt!)).toBeLessThan(Date.parse(began));
  });
});

describe("POST /schedules validation", () => {
  it("refuses bad timing, unknown agents and sessions with a clear 4xx and stores nothing", async () => {
    const { h, server } = await setup();
    const base = { agent: "default", prompt: "x" };
    const cases: [unknown, number, string, RegExp?][] = [
      [{ ...base, cron: "61 * * * *" }, 400, "VALIDATION_ERROR", /invalid cron expression "61 \* \* \* \*"/],
      [{ ...base, cron: "* * * * * *" }, 400, "VALIDATION_ERROR", /five fields/],
      [{ ...base, cron: "every day" }, 400, "VALIDATION_ERROR", /invalid cron/],
      [{ ...base, cron: "0 0 31 2 *" }, 400, "VALIDATION_ERROR", /never matches/],
      [{ ...base, everySeconds: 0 }, 400, "VALIDATION_ERROR", /at least 1/],
      [{ ...base, everySeconds: 0.5 }, 400, "VALIDATION_ERROR", /at least 1/],
      [{ ...base, everySeconds: -5 }, 400, "VALIDATION_ERROR", /at least 1/],
      [{ ...base, everySeconds: "60" }, 400, "VALIDATION_ERROR"],
      [{ ...base }, 400, "VALIDATION_ERROR", /exactly one of "cron"/],
      [{ ...base, cron: "* * * * *", everySeconds: 60 }, 400, "VALIDATION_ERROR", /exactly one of "cron"/],
      [{ ...base, prompt: "", everySeconds: 60 }, 400, "VALIDATION_ERROR"],
      [{ ...base, prompt: "   ", everySeconds: 60 }, 400, "VALIDATION_ERROR", /prompt/],
      [{ prompt: "x", everySeconds: 60 }, 400, "VALIDATION_ERROR", /agent/],
      [{ ...base, everySeconds: 60, when: "now" }, 400, "VALIDATION_ERROR", /unknown field "when"/],
      [{ ...base, agent: "nobody", everySeconds: 60 }, 404, "AGENT_NOT_FOUND", /nobody/],
      [{ ...base, agent: "constructor", everySeconds: 60 }, 404, "AGENT_NOT_FOUND"],
      [{ ...base, everySeconds: 60, session: "sess_missing" }, 404, "SESSION_NOT_FOUND"],
      ["not json", 400, "VALIDATION_ERROR"],
    ];
    for (const [body, status, code, message] of cases) {
      const answer = await send(server, "/schedules", "POST", body);
      expect([answer.status, answer.body.error?.code], JSON.stringify(body)).toEqual([status, code]);
      if (message) expect(answer.body.error.message).toMatch(message);
    }
    const { body: session } = await send(server, "/sessions", "POST", { agent: "default" });
    await send(server, `/sessions/${session.id}`, "DELETE");
    expect((await send(server, "/schedules", "POST", { ...base, everySeconds: 60, session: session.id })).body.error.code).toBe("SESSION_CLOSED");
    expect(await send(server, "/schedules", "GET")).toEqual({ status: 200, body: { schedules: [] } });
    expect(await h.runtime.store.listSchedules()).toEqual([]);

    for (const [method, path, body] of [
      ["GET", "/schedules/sch_nope"],
      ["PATCH", "/schedules/sch_nope", { enabled: true }],
      ["DELETE", "/schedules/sch_nope"],
      ["GET", "/schedules/sch_nope/runs"],
    ] as const) {
      expect((await send(server, path, method, body)).body.error.code, `${method} ${path}`).toBe("SCHEDULE_NOT_FOUND");
    }
    const { body: ok } = await send(server, "/schedules", "POST", { ...base, cron: "0 9 * * MON", enabled: false });
    expect(ok).toMatchObject({ cron: "0 9 * * MON", everySeconds: null, enabled: false, nextRunAt: null });
    expect((await send(server, `/schedules/${ok.id}`, "PATCH", { enabled: "yes" })).status).toBe(400);
    expect((await send(server, `/schedules/${ok.id}`, "PATCH", { prompt: "other" })).status).toBe(400);
    expect((await send(server, `/schedules/${ok.id}/runs?limit=0`, "GET")).status).toBe(400);
  });
});

describe("schedules over a restart (manual clock)", () => {
  it("fires the due times missed while no runtime ran once at the next start, then goes on on the grid", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 0, 0, 0, 250));
    h = await createRuntimeHarness({ clock });
    h.llm.respond(() => reply().text("done").stop());
    const schedule = await h.runtime.schedules.create({ agent: "default", prompt: "catch up", everySeconds: 1 });
    const missedDue = Date.parse(schedule.nextRunAt!);
    await h.runtime.close();
    // Three due times pass with nothing running.
    await clock.advance(3200);
    expect(clock.now()).toBeGreaterThan(missedDue + 2000);
    expect(h.llm.completionRequests).toHaveLength(0);

    const restarted = await createRuntime({ workspace: h.ws.root, env: h.env, log: h.log, clock });
    extra.push(restarted);
    const startedAt = clock.now();
    // Everything missed fires once, shortly after the start (the start-up delay).
    let done = chatDones(restarted, 1);
    await clock.advance(500);
    await done;
    const caughtUp = await restarted.schedules.get(schedule.id);
    const next = Date.parse(caughtUp.nextRunAt!);
    // The next due time is the first on the grid after the catch-up, not one of those missed.
    expect(next).toBeGreaterThan(startedAt + 500 - 1000);
    expect(next).toBeLessThanOrEqual(startedAt + 500 + 1000);
    expect((next - missedDue) % 1000).toBe(0);
    done = chatDones(restarted, 1);
    await clock.advance(next - clock.now());
    await done;
    await restarted.schedules.setEnabled(schedule.id, false);
    await restarted.schedules.idle();
    const runs = (await restarted.schedules.runs(schedule.id)).reverse();
    expect(runs.map((r) => [r.at, r.status])).toEqual([
      [new Date(missedDue).toISOString(), "ok"],
      [new Date(next).toISOString(), "ok"],
    ]);
    expect(h.llm.completionRequests).toHaveLength(2);
  });

  it("records a run cut by a stop as an error, and runs again after the start", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    h = await createRuntimeHarness({ clock });
    h.llm.respond((request) => (h!.llm.completionRequests.indexOf(request) === 0 ? reply().waitFor(new Promise(() => undefined)).stop() : reply().text("fine").stop()));
    const schedule = await h.runtime.schedules.create({ agent: "default", prompt: "long", everySeconds: 1 });
    await clock.advance(1000);
    await h.llm.waitForRequests(1);
    const cut = (await h.runtime.schedules.get(schedule.id)).running!;
    expect(cut.sessionId).toMatch(/^sess_/);
    await h.runtime.close();

    const restarted = await createRuntime({ workspace: h.ws.root, env: h.env, log: h.log, clock });
    extra.push(restarted);
    const done = chatDones(restarted, 1);
    await clock.advance(1000);
    await done;
    await restarted.schedules.setEnabled(schedule.id, false);
    await restarted.schedules.idle();
    const runs = (await restarted.schedules.runs(schedule.id)).reverse();
    expect(runs[0]).toMatchObject({ at: cut.at, sessionId: cut.sessionId, status: "error", error: expect.stringMatching(/^CANCELLED: /) });
    expect(runs.slice(1).map((r) => r.status)).toEqual(["ok"]);
  });

  it("ends the run mark a killed process left as an INTERRUPTED error at the next start", async () => {
    h = await createRuntimeHarness();
    h.llm.respond(() => reply().text("fine").stop());
    const schedule = await h.runtime.schedules.create({ agent: "default", prompt: "x", cron: "0 0 1 1 *" });
    await h.runtime.close();
    // What a process killed mid-run leaves: the mark of its run, never ended.
    const { SqliteStore } = await import("../../src/store/sqlite/sqlite-store.js");
    const store = SqliteStore.open(h.runtime.config.paths.dbPath);
    await store.beginScheduleRun(schedule.id, Date.UTC(2026, 0, 1), "node_killed", Date.now());
    await store.setScheduleRunSession(schedule.id, Date.UTC(2026, 0, 1), "sess_cut");
    await store.close();

    const restarted = await createRuntime({ workspace: h.ws.root, env: h.env, log: h.log });
    extra.push(restarted);
    expect((await restarted.schedules.get(schedule.id)).running).toBeNull();
    expect(await restarted.schedules.runs(schedule.id)).toEqual([
      { at: "2026-01-01T00:00:00.000Z", sessionId: "sess_cut", status: "error", error: expect.stringMatching(/^INTERRUPTED: /), startedAt: expect.any(String), finishedAt: expect.any(String) },
    ]);
  });
});

describe("cron schedules (manual clock)", () => {
  it("fires at each match of a five-field UTC expression, and a long outage fires once", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 0, 2, 0));
    const { h, server } = await setup({ clock });
    h.llm.respond(() => reply().text("report").stop());
    const { body: schedule } = await send(server, "/schedules", "POST", { agent: "default", prompt: "report", cron: "*/5 * * * *" });
    expect(schedule.nextRunAt).toBe("2026-01-01T00:05:00.000Z");
    let done = chatDones(h.runtime, 1);
    await clock.advance(3 * 60_000);
    await done;
    await h.runtime.schedules.idle();
    expect((await send(server, `/schedules/${schedule.id}`, "GET")).body.nextRunAt).toBe("2026-01-01T00:10:00.000Z");
    // The loop stalls for an hour (a machine asleep): the missed matches fire once, then the grid goes on.
    clock.jumpWall(58 * 60_000);
    done = chatDones(h.runtime, 1);
    await clock.advance(5 * 60_000);
    await done;
    await h.runtime.schedules.idle();
    const runs = (await send(server, `/schedules/${schedule.id}/runs`, "GET")).body.runs.map((r: { at: string }) => r.at);
    expect(runs).toEqual(["2026-01-01T00:10:00.000Z", "2026-01-01T00:05:00.000Z"]);
    expect((await send(server, `/schedules/${schedule.id}`, "GET")).body.nextRunAt).toBe("2026-01-01T01:10:00.000Z");
  });
});
