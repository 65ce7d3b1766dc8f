import { afterEach, describe, expect, it } from "vitest";
import { request as httpRequest } from "node:http";
import { InProcessEventBus } from "../../src/core/memory-bus.js";
import { createApp } from "../../src/server/app.js";
import type { EventFilter, VeilEvent } from "../../src/base/events.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

/** The real bus, counting open subscriptions (an SSE stream holds one while it is open). */
class CountingBus extends InProcessEventBus {
  open = 0;
  override subscribe(filter: EventFilter, handler: (event: VeilEvent) => void): () => void {
    this.open++;
    const unsubscribe = super.subscribe(filter, handler);
    let done = false;
    return () => {
      if (!done) this.open--;
      done = true;
      unsubscribe();
    };
  }
}

/** One request as sent on the wire: status, headers and every body byte received. */
function send(port: number, method: string, path: string): Promise<{ status: number; type: string | undefined; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path, headers: { authorization: `Bearer ${TEST_SECRET}` } }, (res) => {
      // Media-type parameters compare without their optional spaces ("text/plain;charset=UTF-8").
      const type = res.headers["content-type"]?.replace(/\s+/g, "").toLowerCase();
      if (method === "GET" && String(type).startsWith("text/event-stream")) {
        // A stream never ends by itself: its headers are the answer.
        resolve({ status: res.statusCode ?? 0, type, bytes: 0 });
        res.destroy();
        return;
      }
      let bytes = 0;
      res.on("data", (chunk: Buffer) => (bytes += chunk.length));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, type, bytes }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("HEAD", () => {
  it("answers every GET route with the GET's status and headers and no body, streams included", async () => {
    const bus = new CountingBus();
    h = await createRuntimeHarness({ bus });
    const server = await h.serve();
    const session = (await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json()) as { id: string };
    await server.fetch("/memory/MEMORY.md", { method: "PUT", body: "- shared fact", headers: { "content-type": "text/plain" } });
    await server.fetch("/agents/default/memory/MEMORY.md", { method: "PUT", body: "- agent fact", headers: { "content-type": "text/plain" } });
    const values: Record<string, string> = { id: session.id, name: "default", file: "MEMORY.md" };

    const baseline = bus.open;
    // The router's own list: a GET route added later is walked too.
    const paths = [...new Set(createApp(server.state).routes.filter((r) => r.method === "GET").map((r) => r.path))];
    expect(paths).toEqual(expect.arrayContaining(["/memory/:file", "/agents/:name/memory/:file", "/events", "/sessions/:id/events", "/openapi.json", "/"]));
    const answers: Record<string, number> = {};
    for (const template of paths) {
      const path = template.startsWith("/v1/models/") ? "/v1/models/fake-model" : template.replace(/:([A-Za-z_]+)(\{[^}]*\})?/g, (_m, name: string) => values[name] ?? "unknown");
      const get = await send(server.port, "GET", path);
      const head = await send(server.port, "HEAD", path);
      expect({ path, status: head.status, type: head.type, bytes: head.bytes }).toEqual({ path, status: get.status, type: get.type, bytes: 0 });
      answers[path] = head.status;
    }
    // The walk reached real answers, not only 404s.
    expect(answers["/memory/MEMORY.md"]).toBe(200);
    expect(answers["/agents/default/memory/MEMORY.md"]).toBe(200);
    expect(answers[`/sessions/${session.id}/events`]).toBe(200);
    expect(answers["/v1/models/fake-model"]).toBe(200);
    expect(Object.values(answers).filter((status) => status >= 500)).toEqual([]);
    // Every stream the walk opened is closed again: a HEAD leaves no subscription behind.
    await expect.poll(() => bus.open).toBe(baseline);
  });
});
