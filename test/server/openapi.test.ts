import { afterEach, describe, expect, it } from "vitest";
import { Validator } from "@seriousme/openapi-schema-validator";
import { createApp } from "../../src/server/app.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

type Operation = { requestBody?: { content: Record<string, { schema: object }> }; security?: unknown[]; "x-veil-undocumented"?: boolean; parameters?: { name: string; in: string }[] };
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };

const toOpenApiPath = (path: string) => path.replace(/:([A-Za-z_]+)(\{[^}]*\})?/g, "{$1}");

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document, behind the bearer secret", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    expect((await fetch(`${server.url}/openapi.json`)).status).toBe(401);
    const res = await server.fetch("/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as Document;
    expect(doc.openapi).toBe("3.1.0");
    const validator = new Validator();
    const result = await validator.validate(doc as unknown as object);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    expect(doc.paths["/health"]!.get!.security).toEqual([]);
    // The validator does refuse a broken document (so the pass above means something).
    const broken = await new Validator().validate({ ...doc, paths: { "/x": { get: { responses: 5 } } } } as unknown as object);
    expect(broken.valid).toBe(false);
  });

  it("has every route the app registered, each documented, with a request-body schema for each route that reads a body", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const doc = (await (await server.fetch("/openapi.json")).json()) as Document;
    const app = createApp({ runtime: h.runtime, secret: TEST_SECRET, allowedHosts: null });
    const registered = app.routes.filter((r) => ["GET", "POST", "PUT", "PATCH", "DELETE"].includes(r.method));
    expect(registered.length).toBeGreaterThan(30);
    for (const route of registered) {
      const op = doc.paths[toOpenApiPath(route.path)]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${route.path}`).toBeDefined();
      expect(op!["x-veil-undocumented"], `${route.method} ${route.path} has no entry in src/server/openapi.ts`).toBeUndefined();
    }
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual([...new Set(registered.map((r) => `${r.method} ${toOpenApiPath(r.path)}`))].sort());

    // Which routes read a body is found by sending each one a broken JSON body: a route that
    // reads it answers 400, and then its operation must carry a request-body schema.
    const session = (await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json()) as { id: string };
    const fill = (path: string) => path.replace("{id}", session.id).replace("{name}", "default").replace("{file}", "MEMORY.md").replace("{token}", "t");
    const readsBody: string[] = [];
    const writes = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).filter((m) => m !== "get").map((method) => ({ method, path })));
    // Closing the session last keeps it usable for the others.
    writes.sort((a, b) => Number(a.method === "delete") - Number(b.method === "delete"));
    for (const { method, path } of writes) {
      // DELETE /sessions refuses a request naming no ids whatever its body: it is given one.
      const query = method === "delete" && path === "/sessions" ? "?ids=sess_none" : "";
      const res = await server.fetch(fill(path) + query, { method: method.toUpperCase(), body: "{not json", headers: { "content-type": "application/json" } });
      const body = (await res.json().catch(() => null)) as { error?: { code?: string } } | null;
      if (res.status === 400 && /VALIDATION_ERROR|INVALID_JSON/.test(body?.error?.code ?? "")) readsBody.push(`${method.toUpperCase()} ${path}`);
    }
    expect(readsBody).toEqual(expect.arrayContaining(["POST /sessions", "POST /sessions/{id}/chat", "PATCH /sessions/{id}", "POST /sessions/close", "POST /v1/chat/completions", "PUT /memory/{file}", "POST /stream-tokens"]));
    for (const key of readsBody) {
      const [method, path] = key.split(" ") as [string, string];
      const op = doc.paths[path]![method.toLowerCase()]!;
      expect(op.requestBody?.content["application/json"]?.schema, `${key} reads a body`).toMatchObject({ type: "object" });
    }
  });

  it("request-body schemas are the ones the routes validate with", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const doc = (await (await server.fetch("/openapi.json")).json()) as Document;
    const create = doc.paths["/sessions"]!.post!.requestBody!.content["application/json"]!.schema as { properties: Record<string, unknown>; additionalProperties: boolean };
    expect(Object.keys(create.properties)).toEqual(["agent", "title", "mode", "model", "reasoning", "budget_override"]);
    expect(create.additionalProperties).toBe(false);
    // What the schema forbids, the route refuses.
    const refused = await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "default", colour: "red" }) });
    expect(refused.status).toBe(400);
  });

  it("documents structured output: the chat's output_schema, the reply's structured, response_format on the OpenAI wire", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const doc = (await (await server.fetch("/openapi.json")).json()) as Document & { components: { schemas: Record<string, { properties: Record<string, { description?: string }> }> } };
    const schemaOf = (path: string) => doc.paths[path]!.post!.requestBody!.content["application/json"]!.schema as { properties: Record<string, { description?: string }> };
    expect(schemaOf("/sessions/{id}/chat").properties.output_schema!.description).toMatch(/JSON Schema.*structured.*OUTPUT_SCHEMA_MISMATCH/s);
    expect(doc.components.schemas.ChatReply!.properties.structured!.description).toMatch(/parsed value/);
    expect(schemaOf("/v1/chat/completions").properties.response_format!.description).toMatch(/json_schema.*agent\/<name>|agent\/<name>.*json_schema/s);
  });
});
