import { afterEach, describe, expect, it } from "vitest";
import { request as httpRequest } from "node:http";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";
import { hang, reply } from "../helpers/fake-llm.js";
import { readSse } from "../helpers/sse-client.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

async function json(res: Response) {
  return (await res.json()) as any;
}

/** Status of GET /health sent with exactly these headers (fetch cannot set Host). */
function healthStatus(port: number, headers: Record<string, string>): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path: "/health", headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("HTTP API", () => {
  it("serves /health without auth and requires the bearer secret everywhere else", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const health = await fetch(`${server.url}/health`);
    expect(health.status).toBe(200);
    expect(await json(health)).toMatchObject({ ok: true, version: expect.any(String) });

    const anonymous = await fetch(`${server.url}/sessions`);
    expect(anonymous.status).toBe(401);
    expect(await json(anonymous)).toEqual({ error: { code: "UNAUTHORIZED", message: expect.any(String) } });
    for (const token of ["x", "test-secre", "test-secret-but-longer", "é".repeat(300)]) {
      const wrong = await fetch(`${server.url}/sessions`, { headers: { authorization: `Bearer ${token}` } });
      expect(wrong.status).toBe(401);
    }
    const ok = await fetch(`${server.url}/sessions`, { headers: { authorization: `Bearer ${TEST_SECRET}` } });
    expect(ok.status).toBe(200);
  });

  it("rejects foreign Host and Origin headers (DNS rebinding)", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const status = (headers: Record<string, string>) => healthStatus(server.port, headers);
    expect(await status({ host: `evil.example:${server.port}` })).toBe(403);
    expect(await status({ host: `127.0.0.1:${server.port}`, origin: "http://evil.example" })).toBe(403);
    expect(await status({ host: `localhost:${server.port}`, origin: `http://localhost:${server.port}` })).toBe(200);
    expect(await status({ host: `127.0.0.1:${server.port}` })).toBe(200);
  });

  it("bound to every interface, answers any Host name but still refuses cross-origin requests", async () => {
    h = await createRuntimeHarness();
    const { startServer } = await import("../../src/server/listen.js");
    const server = await startServer({ runtime: h.runtime, secret: TEST_SECRET, host: "0.0.0.0", port: 0, closeRuntime: false });
    try {
      const status = (headers: Record<string, string>) => healthStatus(server.port, headers);
      expect(await status({ host: `192.168.1.99:${server.port}` })).toBe(200);
      expect(await status({ host: `veil.lan:${server.port}`, origin: `http://veil.lan:${server.port}` })).toBe(200);
      expect(await status({ host: `veil.lan:${server.port}`, origin: "http://evil.example" })).toBe(403);
    } finally {
      await server.close();
    }
  });

  it("validates bodies with stable codes and never loses or corrupts anything", async () => {
    h = await createRuntimeHarness({ settings: { limits: { maxBodyBytes: 2048 } } });
    const server = await h.serve();
    const bad = await server.fetch("/sessions", { method: "POST", body: "{not json" });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error.code).toBe("VALIDATION_ERROR");
    const wrongType = await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: 42 }) });
    expect(wrongType.status).toBe(400);
    expect((await json(wrongType)).error.message).toMatch(/agent/);
    const unknownAgent = await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "nobody" }) });
    expect(unknownAgent.status).toBe(404);
    expect((await json(unknownAgent)).error.code).toBe("AGENT_NOT_FOUND");
    const tooBig = await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "x".repeat(5000) }) });
    expect(tooBig.status).toBe(413);
    expect((await json(tooBig)).error.code).toBe("PAYLOAD_TOO_LARGE");
    const missing = await server.fetch("/sessions/sess_nope");
    expect(missing.status).toBe(404);
    expect((await json(missing)).error.code).toBe("SESSION_NOT_FOUND");
    const noRoute = await server.fetch("/nope");
    expect(noRoute.status).toBe(404);

    const created = await json(await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "default" }) }));
    const emptyChat = await server.fetch(`/sessions/${created.id}/chat`, { method: "POST", body: JSON.stringify({ message: "" }) });
    expect(emptyChat.status).toBe(400);
    const extra = await server.fetch(`/sessions/${created.id}/chat`, { method: "POST", body: JSON.stringify({ message: "hi", bogus: 1 }) });
    expect(extra.status).toBe(400);
    expect(await h.runtime.store.listMessages(created.id)).toEqual([]);
    const health = await fetch(`${server.url}/health`);
    expect(health.status).toBe(200);
  });

  it("creates, lists, chats with, reads and closes a session", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    h.llm.enqueue(reply().text("pong").usage({ prompt_tokens: 12, completion_tokens: 3 }).stop());
    const created = await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "default" }) });
    expect(created.status).toBe(201);
    const session = await json(created);
    expect(session).toMatchObject({ agent: "default", mode: "chat", status: "idle", parent_session_id: null, spawn_depth: 0, context_size: 0 });

    const chat = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "ping" }) });
    expect(chat.status).toBe(200);
    const body = await json(chat);
    expect(body).toMatchObject({ content: "pong", finishReason: "stop", messageId: expect.stringMatching(/^msg_/) });
    expect(body.tokenUsage).toMatchObject({ prompt_tokens: 12, completion_tokens: 3 });

    const list = await json(await server.fetch("/sessions"));
    expect(list.map((s: { id: string }) => s.id)).toContain(session.id);
    const row = await json(await server.fetch(`/sessions/${session.id}`));
    expect(row.context_size).toBe(15);
    const messages = await json(await server.fetch(`/sessions/${session.id}/messages`));
    expect(messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ["user", "ping"],
      ["assistant", "pong"],
    ]);

    const closed = await server.fetch(`/sessions/${session.id}`, { method: "DELETE" });
    expect((await json(closed)).status).toBe("closed");
    const after = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "again" }) });
    expect(after.status).toBe(409);
    expect((await json(after)).error.code).toBe("SESSION_CLOSED");
  });

  it("streams a chat turn as SSE ending with chat.done", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    h.llm.enqueue(reply().thinking("hmm").tool("log_write", { message: "noted" }).stop());
    h.llm.enqueue(reply().text("all ").text("done").stop());
    const session = await json(await server.fetch("/sessions", { method: "POST", body: "{}" }));
    const res = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "go", stream: true }) });
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
    const events = await readSse(res);
    const types = events.map((e) => e.data.type);
    expect(types.slice(0, 2)).toEqual(["session.state", "chat.message"]);
    expect(types.at(-1)).toBe("chat.done");
    expect(types).toEqual(expect.arrayContaining(["thinking.chunk", "inference.tool", "tool.start", "tool.end", "chat.chunk", "session.state"]));
    const end = events.find((e) => e.data.type === "tool.end")!.data;
    expect(end).toMatchObject({ sessionId: session.id, toolName: "log_write", toolInput: { message: "noted" }, output: "noted", outputPreview: "noted", success: true, durationMs: expect.any(Number) });
    expect(events.at(-1)!.data).toMatchObject({ content: "all done", finishReason: "stop" });
    const ids = events.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it("replays missed events on reconnect with Last-Event-ID and sends keepalives", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve({ heartbeatMs: 50 });
    h.llm.enqueue(reply().text("first").stop());
    h.llm.enqueue(reply().text("second").stop());
    const session = await json(await server.fetch("/sessions", { method: "POST", body: "{}" }));
    await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "one" }) });
    const firstRun = h.events.filter((e) => e.sessionId === session.id);
    const lastSeen = firstRun.at(-1)!.seq;
    await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "two" }) });

    const controller = new AbortController();
    const res = await server.fetch(`/sessions/${session.id}/events`, { headers: { "last-event-id": String(lastSeen) }, signal: controller.signal });
    const events = await readSse(res, { until: (e) => e.data?.type === "chat.done", comments: true, waitForComment: "keepalive" });
    controller.abort();
    const replayed = events.filter((e) => e.data);
    expect(Number(replayed[0]!.id)).toBe(lastSeen + 1);
    expect(replayed.at(-1)!.data).toMatchObject({ type: "chat.done", content: "second" });
    expect(replayed.some((e) => e.data.content === "first")).toBe(false);
    expect(events.some((e) => e.comment === "keepalive")).toBe(true);
  });

  it("cancels a running turn over HTTP and reports it", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    h.llm.enqueue(hang());
    const session = await json(await server.fetch("/sessions", { method: "POST", body: "{}" }));
    const chat = server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "wait" }) });
    await h.llm.waitForRequests(1);
    const cancel = await json(await server.fetch(`/sessions/${session.id}/cancel`, { method: "POST" }));
    expect(cancel).toMatchObject({ ok: true, cancelled: true });
    const reply1 = await json(await chat);
    expect(reply1.finishReason).toBe("cancelled");
    const suspended = await json(await server.fetch(`/sessions/${session.id}/suspend`, { method: "POST" }));
    expect(suspended.session.status).toBe("suspended");
    const refused = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "hello?" }) });
    expect(refused.status).toBe(409);
    const resumed = await json(await server.fetch(`/sessions/${session.id}/resume`, { method: "POST" }));
    expect(resumed.session.status).toBe("idle");
  });

  it("answers a provider outage with 502 LLM error and keeps the message", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    await h.llm.close();
    const session = await json(await server.fetch("/sessions", { method: "POST", body: "{}" }));
    const res = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "anyone?" }) });
    expect(res.status).toBe(502);
    const body = await json(res);
    expect(body.error.code).toMatch(/LLM_ERROR|PROVIDER_ERROR|TIMEOUT/);
    const messages = await json(await server.fetch(`/sessions/${session.id}/messages`));
    expect(messages.map((m: { content: string }) => m.content)).toEqual(["anyone?"]);
  });

  it("lists agents, including the built-in default", async () => {
    h = await createRuntimeHarness({
      files: { ".veil/agents/researcher/agent.json": JSON.stringify({ description: "digs", model: "fake-model" }), ".veil/agents/researcher/AGENT.md": "You research." },
    });
    const server = await h.serve();
    const agents = await json(await server.fetch("/agents"));
    expect(agents.map((a: { name: string }) => a.name).sort()).toEqual(["default", "researcher"]);
    const one = await json(await server.fetch("/agents/researcher"));
    expect(one).toMatchObject({ name: "researcher", description: "digs", source: "project" });
    expect((await server.fetch("/agents/ghost")).status).toBe(404);
  });

  it("serves the todo list a turn wrote, and the tools an agent sees", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const todos = [
      { id: "1", content: "read the config", status: "completed", priority: "high" },
      { id: "2", content: "write the patch", status: "in_progress", priority: "medium" },
    ];
    h.llm.enqueue(reply().tool("todo_write", { todos }).stop());
    h.llm.enqueue(reply().text("planned").stop());
    const session = await json(await server.fetch("/sessions", { method: "POST", body: "{}" }));
    await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "plan it" }) });
    expect(await json(await server.fetch(`/sessions/${session.id}/todos`))).toEqual(todos);
    expect(h.events.some((e) => e.type === "todo.updated" && e.sessionId === session.id)).toBe(true);

    const tools = await json(await server.fetch("/tools?agent=default"));
    expect(tools).toHaveLength(24);
    expect(tools[0]).toMatchObject({ name: "bash", tier: "builtin", state: "always", input_schema: { type: "object" } });
    expect((await server.fetch("/tools?agent=ghost")).status).toBe(404);
  });
});
