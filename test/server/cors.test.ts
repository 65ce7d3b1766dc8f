import { afterEach, describe, expect, it } from "vitest";
import { request as httpRequest } from "node:http";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const UI = "https://ui.example";

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request with exactly these headers (fetch cannot set Host, and browsers add Origin themselves). */
function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path, headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      let text = "";
      res.on("data", (d: Buffer) => (text += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const preflight = (origin: string, method = "POST") => ({ origin, "access-control-request-method": method, "access-control-request-headers": "authorization, content-type" });

describe("CORS (server.allowedOrigins)", () => {
  it("answers a listed origin's preflight without the secret, allowing authorization and content-type", async () => {
    h = await createRuntimeHarness({ settings: { server: { allowedOrigins: [UI, "http://localhost:5173"] } } });
    const { port } = await h.serve();
    const answer = await send(port, "OPTIONS", "/sessions", preflight(UI));
    expect(answer.status).toBe(204);
    expect(answer.headers["access-control-allow-origin"]).toBe(UI);
    expect(String(answer.headers["access-control-allow-headers"]).split(/,\s*/)).toEqual(expect.arrayContaining(["authorization", "content-type"]));
    expect(String(answer.headers["access-control-allow-methods"])).toMatch(/POST/);
    expect(answer.headers.vary).toMatch(/Origin/);
    expect((await send(port, "OPTIONS", "/events", preflight("http://localhost:5173", "GET"))).status).toBe(204);
  });

  it("a listed origin may PATCH: the preflight allows it, and renaming a session from that origin works", async () => {
    h = await createRuntimeHarness({ settings: { server: { allowedOrigins: [UI] } } });
    const { port } = await h.serve();
    const created = JSON.parse((await send(port, "POST", "/sessions", { origin: UI, authorization: `Bearer ${TEST_SECRET}`, "content-type": "application/json" }, "{}")).body) as { id: string };
    const pre = await send(port, "OPTIONS", `/sessions/${created.id}`, preflight(UI, "PATCH"));
    expect(pre.status).toBe(204);
    expect(String(pre.headers["access-control-allow-methods"]).split(/,\s*/)).toContain("PATCH");
    const renamed = await send(port, "PATCH", `/sessions/${created.id}`, { origin: UI, authorization: `Bearer ${TEST_SECRET}`, "content-type": "application/json" }, JSON.stringify({ title: "from the UI" }));
    expect(renamed.status).toBe(200);
    expect(renamed.headers["access-control-allow-origin"]).toBe(UI);
    expect(JSON.parse(renamed.body)).toMatchObject({ id: created.id, title: "from the UI" });
  });

  it("a listed origin's requests carry Access-Control-Allow-Origin, errors included; the secret is still required", async () => {
    h = await createRuntimeHarness({ settings: { server: { allowedOrigins: [UI] } } });
    const { port } = await h.serve();
    const created = await send(port, "POST", "/sessions", { origin: UI, authorization: `Bearer ${TEST_SECRET}`, "content-type": "application/json" }, "{}");
    expect(created.status).toBe(201);
    expect(created.headers["access-control-allow-origin"]).toBe(UI);
    const anonymous = await send(port, "GET", "/sessions", { origin: UI });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers["access-control-allow-origin"]).toBe(UI);
    const missing = await send(port, "GET", "/sessions/sess_nope", { origin: UI, authorization: `Bearer ${TEST_SECRET}` });
    expect(missing.status).toBe(404);
    expect(missing.headers["access-control-allow-origin"]).toBe(UI);
  });

  it("every other foreign origin stays 403, preflight or not; Host must still name the server", async () => {
    h = await createRuntimeHarness({ settings: { server: { allowedOrigins: [UI] } } });
    const { port } = await h.serve();
    for (const origin of ["https://evil.example", "http://ui.example", "https://ui.example:8443", "null"]) {
      const pre = await send(port, "OPTIONS", "/sessions", preflight(origin));
      expect(pre.status, origin).toBe(403);
      expect(pre.headers["access-control-allow-origin"]).toBeUndefined();
      expect((await send(port, "GET", "/sessions", { origin, authorization: `Bearer ${TEST_SECRET}` })).status, origin).toBe(403);
    }
    // DNS rebinding: a listed Origin does not make a foreign Host acceptable.
    expect((await send(port, "OPTIONS", "/sessions", { ...preflight(UI), host: `rebound.example:${port}` })).status).toBe(403);
    expect((await send(port, "GET", "/sessions", { origin: UI, host: `rebound.example:${port}`, authorization: `Bearer ${TEST_SECRET}` })).status).toBe(403);
  });

  it("by default no origin is listed: a foreign preflight gets 403", async () => {
    h = await createRuntimeHarness();
    const { port } = await h.serve();
    const answer = await send(port, "OPTIONS", "/sessions", preflight(UI));
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "FORBIDDEN" } });
  });

  it("a malformed allowedOrigins entry is a CONFIG_ERROR naming it", async () => {
    for (const [origins, fragment] of [[["https://ui.example/app"], "allowedOrigins[0]"], ["https://ui.example", "must be a list"], [[42], "allowedOrigins[0] must be a string"]] as const) {
      h = await createRuntimeHarness({ settings: { server: { allowedOrigins: origins } } });
      await expect(h.serve()).rejects.toMatchObject({ code: "CONFIG_ERROR", message: expect.stringContaining(fragment) });
      await h.close();
      h = undefined;
    }
  });
});
