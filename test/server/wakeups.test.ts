import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import type { VeilEvent } from "../../src/base/events.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";

const START = Date.UTC(2026, 0, 1);
let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function setup() {
  const clock = new ManualClock(START);
  h = await createRuntimeHarness({ clock });
  const server = await h.serve();
  const created = await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "default" }) });
  const session = (await created.json()) as { id: string };
  const post = (body: unknown, id = session.id) => server.fetch(`/sessions/${id}/wakeup`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body) });
  return { clock, server, session, post, harness: h };
}

describe("GET/POST/DELETE /sessions/:id/wakeup", () => {
  it("arms, shows, fires through the session and removes the schedule", async () => {
    const { clock, server, session, post, harness } = await setup();
    expect(await (await server.fetch(`/sessions/${session.id}/wakeup`)).json()).toEqual({ wakeup: null });

    const armed = await post({ time: "90s", message: "check in" });
    expect(armed.status).toBe(200);
    const expected = { time: "90s", message: "check in", loop: false, nextFireAt: new Date(START + 90_000).toISOString(), intervalMs: 90_000 };
    expect(await armed.json()).toEqual({ wakeup: expected });
    expect(await (await server.fetch(`/sessions/${session.id}/wakeup`)).json()).toEqual({ wakeup: expected });

    harness.llm.enqueue(reply().text("checked in").stop());
    const done = new Promise<VeilEvent>((resolve) => {
      const off = harness.runtime.bus.subscribe({ sessionId: session.id, types: ["chat.done"] }, (e) => {
        off();
        resolve(e);
      });
    });
    await clock.advance(90_000);
    expect(await done).toMatchObject({ content: "checked in" });
    expect(await (await server.fetch(`/sessions/${session.id}/wakeup`)).json()).toEqual({ wakeup: null });
    const messages = await harness.runtime.store.listMessages(session.id);
    expect(messages[0]).toMatchObject({ role: "user", content: "check in", meta: { source: "wakeup" } });

    await post({ time: 2, message: "loop", loop: true });
    const removed = await server.fetch(`/sessions/${session.id}/wakeup`, { method: "DELETE" });
    expect(await removed.json()).toEqual({ ok: true, removed: true, wakeup: null });
    expect(await (await server.fetch(`/sessions/${session.id}/wakeup`)).json()).toEqual({ wakeup: null });
    expect(await (await server.fetch(`/sessions/${session.id}/wakeup`, { method: "DELETE" })).json()).toMatchObject({ removed: false });

    await post({ time: "10m", message: "x" });
    const cancelled = await post({ time: "0" });
    expect(await cancelled.json()).toEqual({ wakeup: null });
    expect(await harness.runtime.store.getWakeup(session.id)).toBeUndefined();
  });

  it("rejects bad input with 400 VALIDATION_ERROR and arms nothing", async () => {
    const { post, harness, session } = await setup();
    const bad: unknown[] = [
      { time: "soon", message: "x" },
      { time: "-5", message: "x" },
      { time: "99999h", message: "x" },
      { time: "5m" },
      { time: "5m", message: "   " },
      { time: "5s", message: "x", loop: true },
      { time: "5m", message: "x", loop: "yes" },
      { time: "5m", message: "x", extra: 1 },
      { message: "x" },
      { time: true, message: "x" },
      "[1,2]",
      "{not json",
    ];
    for (const body of bad) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const json = (await res.json()) as { error: { code: string; message: string } };
      expect(json.error.code).toBe("VALIDATION_ERROR");
      expect(json.error.message.length).toBeGreaterThan(10);
    }
    expect(await harness.runtime.store.getWakeup(session.id)).toBeUndefined();
  });

  it("404 for an unknown session, 409 SESSION_CLOSED for a closed one, 401 without the secret", async () => {
    const { server, post, session } = await setup();
    for (const res of [await post({ time: "5m", message: "x" }, "sess_nope"), await server.fetch("/sessions/sess_nope/wakeup"), await server.fetch("/sessions/sess_nope/wakeup", { method: "DELETE" })]) {
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("SESSION_NOT_FOUND");
    }
    await server.fetch(`/sessions/${session.id}`, { method: "DELETE" });
    const closed = await post({ time: "5m", message: "x" });
    expect(closed.status).toBe(409);
    expect(((await closed.json()) as { error: { code: string } }).error.code).toBe("SESSION_CLOSED");

    const anonymous = await fetch(`${server.url}/sessions/${session.id}/wakeup`);
    expect(anonymous.status).toBe(401);
  });
});
