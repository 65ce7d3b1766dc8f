import { afterEach, describe, expect, it } from "vitest";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

const NAMES = ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"];

describe("names that are JavaScript object properties are plain unknown names", () => {
  it("GET /agents/:name, GET /tools?agent=, POST /sessions answer 404 AGENT_NOT_FOUND; an unknown mode is 400", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    for (const name of NAMES) {
      const agent = await server.fetch(`/agents/${encodeURIComponent(name)}`);
      expect([name, agent.status, (await agent.json()).error?.code]).toEqual([name, 404, "AGENT_NOT_FOUND"]);
      const tools = await server.fetch(`/tools?agent=${encodeURIComponent(name)}`);
      expect([name, tools.status, (await tools.json()).error?.code]).toEqual([name, 404, "AGENT_NOT_FOUND"]);
      const created = await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: name }) });
      expect([name, created.status, (await created.json()).error?.code]).toEqual([name, 404, "AGENT_NOT_FOUND"]);
      const mode = await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ mode: name }) });
      expect([name, mode.status, (await mode.json()).error?.code]).toEqual([name, 400, "VALIDATION_ERROR"]);
    }
    expect((await server.fetch("/agents/default")).status).toBe(200);
  });

  it("agent_spawn of such a name answers the model AGENT_NOT_FOUND with the known agents", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(reply().tool("agent_spawn", { agent: "constructor", instance_name: "x", objective: "o" }).stop(), reply().text("ok").stop());
    const server = await h.serve();
    const session = await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json();
    const chat = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "spawn" }) });
    expect(chat.status).toBe(200);
    const toolMessage = h.llm.completionRequests[1]!.body.messages.find((m: { role: string }) => m.role === "tool");
    expect(toolMessage.content).toMatch(/AGENT_NOT_FOUND/);
    expect(toolMessage.content).toMatch(/no agent named "constructor" \(known agents: default\)/);
  });

  it("a model key or provider named like a prototype member goes to the default provider", async () => {
    h = await createRuntimeHarness({ settings: { retry: { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 1 }, fallbackModels: [] } });
    h.llm.respond((req) => reply().text(`model ${req.body.model}`).stop());
    const server = await h.serve();
    const session = await (await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ model: "constructor/x" }) })).json();
    const chat = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "hi" }) });
    expect(chat.status).toBe(200);
    expect((await chat.json()).content).toBe("model constructor/x");
  });
});
