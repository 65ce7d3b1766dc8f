import { afterEach, describe, expect, it } from "vitest";
import { createRuntime } from "../../src/runtime.js";
import { startServer } from "../../src/server/listen.js";
import { memoryLogger } from "../../src/base/log.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";
import { readSse } from "../helpers/sse-client.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

async function chatOnce(server: { fetch(path: string, init?: RequestInit): Promise<Response> }, id: string, message: string) {
  const res = await server.fetch(`/sessions/${id}/chat`, { method: "POST", body: JSON.stringify({ message }) });
  expect(res.status).toBe(200);
}

describe("durable event log over HTTP", () => {
  it("pages stored events as JSON and replays them over SSE after a restart, seq never repeating", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(reply().text("one").stop());
    const server = await h.serve();
    const session = await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json();
    await chatOnce(server, session.id, "first");
    const page = await (await server.fetch(`/sessions/${session.id}/events?after=0&limit=100&follow=false`)).json();
    expect(page.map((e: { seq: number }) => e.seq)).toEqual(page.map((_: unknown, i: number) => i + 1));
    expect(page.map((e: { type: string }) => e.type)).toEqual(["session.state", "chat.message", "chat.message", "session.state", "chat.done"]);
    expect(page[4]).toMatchObject({ type: "chat.done", sessionId: session.id, content: "one", gseq: expect.any(Number) });
    const second = await (await server.fetch(`/sessions/${session.id}/events?after=2&limit=2&follow=false`)).json();
    expect(second.map((e: { seq: number }) => e.seq)).toEqual([3, 4]);
    await server.close();
    await h.runtime.close();

    // A new runtime on the same store: replay from the log, and new events continue the numbering.
    const log = memoryLogger();
    const again = await createRuntime({ workspace: h.ws.root, env: h.env, log });
    const next = await startServer({ runtime: again, secret: TEST_SECRET, port: 0, closeRuntime: true });
    const authed = (path: string, init: RequestInit = {}) => fetch(`${next.url}${path}`, { ...init, headers: { authorization: `Bearer ${TEST_SECRET}`, ...(init.body ? { "content-type": "application/json" } : {}), ...(init.headers as Record<string, string>) } });
    try {
      const controller = new AbortController();
      const res = await authed(`/sessions/${session.id}/events`, { headers: { "last-event-id": "3" }, signal: controller.signal });
      const got = readSse(res, { until: (m) => m.data?.type === "chat.done" && Number(m.id) > 5 });
      h.llm.enqueue(reply().text("two").stop());
      await chatOnce({ fetch: authed }, session.id, "second");
      const messages = await got;
      controller.abort();
      const ids = messages.filter((m) => m.id !== undefined).map((m) => Number(m.id));
      expect(ids.slice(0, 2)).toEqual([4, 5]);
      expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b));
      expect(ids.at(-1)).toBe(10);
      const all = await (await authed(`/sessions/${session.id}/events?follow=false`)).json();
      expect(all.map((e: { seq: number }) => e.seq)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    } finally {
      await next.close();
      h.runtime = again;
    }
  });

  it("answers bad sequence numbers with 400 and a future one with an empty replay", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const session = await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json();
    for (const query of ["after=abc&follow=false", "after=-1&follow=false", "limit=1.5&follow=false", "limit=-3&follow=false", "lastEventId=x", "follow=maybe"]) {
      const res = await server.fetch(`/sessions/${session.id}/events?${query}`);
      expect(res.status, query).toBe(400);
      expect((await res.json()).error.code).toBe("VALIDATION_ERROR");
    }
    const bad = await server.fetch(`/events`, { headers: { "last-event-id": "-5" } });
    expect(bad.status).toBe(400);
    expect(await (await server.fetch(`/sessions/${session.id}/events?after=999999&follow=false`)).json()).toEqual([]);
    const controller = new AbortController();
    const res = await server.fetch(`/sessions/${session.id}/events`, { headers: { "last-event-id": "999999" }, signal: controller.signal });
    expect(res.status).toBe(200);
    setTimeout(() => controller.abort(), 100);
    const got = await readSse(res).catch(() => []);
    expect(got.filter((m) => m.data)).toEqual([]);
  });
});
