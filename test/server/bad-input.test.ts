import { afterEach, describe, expect, it } from "vitest";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

const BODIES: (string | undefined)[] = [
  "null",
  "[]",
  "42",
  '"text"',
  "{",
  '{"message": null}',
  '{"message": 5}',
  '{"message": ["a"]}',
  '{"agent": {"$gt": ""}}',
  '{"__proto__": {"polluted": true}, "message": "x"}',
  '{"constructor": {"prototype": {"polluted": true}}}',
  '{"time": -5, "message": "x"}',
  '{"time": "soon", "message": "x"}',
  '{"result": ' + "[".repeat(2000) + "]".repeat(2000) + "}",
  "\u0000\u0001\u0002",
  undefined,
];

describe("bad input never crashes the server", () => {
  it("answers every malformed body on every POST/PUT route with a 4xx JSON error and keeps serving", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const session = (await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json()) as { id: string };
    const routes = [
      "/sessions",
      `/sessions/${session.id}/chat`,
      `/sessions/${session.id}/wakeup`,
      `/sessions/${session.id}/cancel`,
      "/remote-methods/nope/result",
      "/v1/chat/completions",
      "/completions",
      "/stream-tokens",
    ];
    for (const route of routes) {
      for (const body of BODIES) {
        const res = await server.fetch(route, { method: "POST", body, headers: { "content-type": "application/json" } });
        expect(res.status, `${route} ${String(body).slice(0, 40)}`).toBeLessThan(500);
        if (res.status >= 400) {
          const payload = (await res.json()) as { error: unknown };
          expect(payload.error, route).toBeTruthy();
        } else {
          await res.body?.cancel();
        }
      }
    }
    for (const body of BODIES) {
      const res = await server.fetch("/memory/MEMORY.md", { method: "PUT", body, headers: { "content-type": "application/json" } });
      expect(res.status).toBeLessThan(500);
      await res.body?.cancel();
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    expect(h.llm.completionRequests).toHaveLength(0);
    const messages = (await (await server.fetch(`/sessions/${session.id}/messages`)).json()) as unknown[];
    expect(messages).toEqual([]);
  });
});
