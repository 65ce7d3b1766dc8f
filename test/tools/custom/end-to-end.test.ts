import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { reply } from "../../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../../helpers/runtime.js";
import { writeTool } from "./tool-folders.js";
import { ensureBuiltRunner } from "./built-runner.js";

const toolNames = (body: { tools?: { function: { name: string } }[] }) => (body.tools ?? []).map((t) => t.function.name);
const systemText = (body: { messages: { role: string; content: string }[] }) => body.messages.find((m) => m.role === "system")!.content;
const toolMessages = (body: { messages: { role: string; content: unknown }[] }) => body.messages.filter((m) => m.role === "tool").map((m) => String(m.content));

describe("custom tools through the agent loop", { timeout: 60_000 }, () => {
  let h: RuntimeHarness;
  beforeAll(async () => {
    await ensureBuiltRunner();
  }, 180_000);
  afterEach(async () => h?.close());

  const projectTools = (h: RuntimeHarness) => h.ws.path(".veil", "tools");

  it("search → activate → call: the schema reaches tools[] only after tool_activate", async () => {
    h = await createRuntimeHarness();
    writeTool(projectTools(h), {
      name: "echo_upper",
      description: "Return the input string uppercased.",
      properties: { message: { type: "string", description: "String to uppercase" } },
      required: ["message"],
      timeout: 5,
      body: "input._emitToolChunk('working'); return input.message.toUpperCase();",
    });
    h.llm.enqueue(reply().tool("tool_search", { query: "uppercase" }).stop());
    h.llm.enqueue(reply().tool("tool_activate", { name: "echo_upper" }).stop());
    h.llm.enqueue(reply().tool("echo_upper", { message: "hello" }).stop());
    h.llm.enqueue(reply().text("done").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, "shout hello")).result;
    expect(result.content).toBe("done");

    const [first, second, third, fourth] = h.llm.completionRequests.map((r) => r.body);
    expect(toolNames(first)).toEqual(expect.arrayContaining(["tool_search", "tool_activate"]));
    expect(toolNames(first)).not.toContain("echo_upper");
    expect(systemText(first)).toContain("- echo_upper: Return the input string uppercased.");
    // tool_search returned the schema but activated nothing.
    expect(toolNames(second)).not.toContain("echo_upper");
    expect(toolMessages(second).at(-1)).toContain('"String to uppercase"');
    expect(toolNames(third)).toContain("echo_upper");
    expect(toolMessages(third).at(-1)).toBe('{"activated":"echo_upper"}');
    expect(toolMessages(fourth).at(-1)).toBe("HELLO");
    // tools[] grew by exactly the one activated schema.
    expect(toolNames(third).length).toBe(toolNames(first).length + 1);

    const chunk = h.events.find((e) => e.type === "tool.chunk" && e.sessionId === session.id);
    expect(chunk).toMatchObject({ toolName: "echo_upper", chunk: "working" });
  });

  it("answers a call to a custom tool that was never activated with TOOL_NOT_FOUND and the hint", async () => {
    h = await createRuntimeHarness();
    writeTool(projectTools(h), { name: "echo_upper", body: "return 'should not run';" });
    h.llm.enqueue(reply().tool("echo_upper", {}).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "go")).result;
    expect(toolMessages(h.llm.completionRequests[1]!.body).at(-1)).toBe(
      'Error: TOOL_NOT_FOUND — custom tool "echo_upper" is not active; call tool_activate({ name: "echo_upper" }) first',
    );
  });

  it("pre-activates an agent-level tool from turn one; allowlist and disallowedTools apply to custom tools", async () => {
    h = await createRuntimeHarness({
      files: {
        ".veil/agents/painter/agent.json": JSON.stringify({
          name: "painter",
          description: "draws",
          systemPrompt: "You draw.",
          modes: { chat: { enabled: true, tools: ["render_layout", "echo_upper", "sleep"], disallowedTools: ["echo_upper"], preActivatedTools: ["render_layout"] } },
        }),
      },
    });
    writeTool(h.ws.path(".veil", "agents", "painter", "tools"), { name: "render_layout", description: "Render a layout.", body: "return 'rendered in ' + input._agent.name;" });
    writeTool(projectTools(h), { name: "render_layout", description: "Project copy (overridden)." });
    writeTool(projectTools(h), { name: "echo_upper", description: "Forbidden here." });
    writeTool(projectTools(h), { name: "unlisted", description: "Not in the allowlist." });
    h.llm.enqueue(reply().tool("render_layout", {}).tool("echo_upper", {}).stop());
    h.llm.enqueue(reply().tool("tool_activate", { name: "unlisted" }).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "painter" });
    await (await h.runtime.sessions.send(session.id, "draw")).result;

    const first = h.llm.completionRequests[0]!.body;
    expect(toolNames(first).sort()).toEqual(["render_layout", "sleep", "tool_activate", "tool_search"]);
    const system = systemText(first);
    expect(system).not.toContain("render_layout");
    expect(system).not.toContain("echo_upper");
    expect(system).not.toContain("unlisted");
    const results = toolMessages(h.llm.completionRequests[1]!.body);
    expect(results).toEqual(["rendered in painter", 'Error: PERMISSION_DENIED — tool "echo_upper" is in disallowedTools of agent "painter" (mode "chat")']);
    expect(toolMessages(h.llm.completionRequests[2]!.body).at(-1)).toBe('Error: PERMISSION_DENIED — tool "unlisted" is not in the tools allowlist of agent "painter" (mode "chat")');
  });

  it("a hanging tool times out without stopping the run or another session's tool call", async () => {
    h = await createRuntimeHarness();
    writeTool(projectTools(h), { name: "hangs", timeout: 1, body: "await new Promise(() => {});" });
    writeTool(projectTools(h), { name: "quick", body: "return 'quick ' + input._sessionId;" });
    const a = await h.runtime.sessions.create({ agent: "default" });
    const b = await h.runtime.sessions.create({ agent: "default" });
    h.llm.respond((req) => {
      const messages = req.body.messages as { role: string; content: string }[];
      const last = messages.at(-1)!;
      if (last.role === "user") return reply().tool("tool_activate", { name: last.content }).stop();
      if (last.content.startsWith('{"activated"')) return reply().tool(JSON.parse(last.content).activated, {}).stop();
      return reply().text(`result: ${last.content}`).stop();
    });
    const [ra, rb] = await Promise.all([(await h.runtime.sessions.send(a.id, "hangs")).result, (await h.runtime.sessions.send(b.id, "quick")).result]);
    expect(ra.content).toMatch(/^result: Error: TOOL_TIMEOUT — /);
    expect(rb.content).toBe(`result: quick ${b.id}`);
  });

  it("_remoteMethodExecution reaches the runtime's remote-method service and returns the UI's answer", async () => {
    h = await createRuntimeHarness();
    writeTool(projectTools(h), {
      name: "ask_user",
      timeout: 30,
      properties: { question: { type: "string" } },
      body: "const answer = await input._remoteMethodExecution({ method: 'user-dialog', data: { question: input.question }, timeoutMs: 20000 }); return 'User answered: ' + JSON.stringify(answer);",
    });
    const service = h.runtime.services.remoteMethods as { resolve(id: string, result: unknown): boolean };
    h.runtime.bus.subscribe({}, (e) => {
      if (e.type === "method.pending") service.resolve(e.id, { choice: "yes", echo: e.data });
    });
    h.llm.enqueue(reply().tool("tool_activate", { name: "ask_user" }).stop());
    h.llm.enqueue(reply().tool("ask_user", { question: "proceed?" }).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "ask")).result;
    expect(toolMessages(h.llm.completionRequests[2]!.body).at(-1)).toBe('User answered: {"choice":"yes","echo":{"question":"proceed?"}}');
    const pending = h.events.find((e) => e.type === "method.pending");
    expect(pending).toMatchObject({ sessionId: session.id, method: "user-dialog" });
  });

  it("sees a tool added on disk at the next session without a restart", async () => {
    h = await createRuntimeHarness();
    h.llm.respond(() => reply().text("ok").stop());
    const first = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(first.id, "hi")).result;
    expect(systemText(h.llm.completionRequests[0]!.body)).not.toContain("fresh_tool");
    writeTool(projectTools(h), { name: "fresh_tool", description: "Just installed." });
    const second = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(second.id, "hi")).result;
    expect(systemText(h.llm.completionRequests[1]!.body)).toContain("- fresh_tool: Just installed.");
  });

  it("GET /tools lists built-in and custom tools with tier, state and schema, plus broken folders", async () => {
    h = await createRuntimeHarness();
    writeTool(projectTools(h), { name: "echo_upper", description: "Uppercase.", properties: { message: { type: "string" } } });
    writeTool(join(h.env.VEIL_HOME!, "tools"), { name: "global_one", description: "From home." });
    writeTool(projectTools(h), { name: "bad", manifestText: "[]" });
    const server = await h.serve();
    const response = await server.fetch("/tools?agent=default");
    expect(response.status).toBe(200);
    const body = (await response.json()) as { name: string | null; state: string }[];
    const byName = new Map(body.filter((t) => t.name).map((t) => [t.name, t]));
    expect(byName.get("tool_search")).toMatchObject({ tier: "builtin", state: "always" });
    expect(byName.get("echo_upper")).toMatchObject({ tier: "custom", scope: "project", state: "available", input_schema: { type: "object", properties: { message: { type: "string" } } } });
    expect(byName.get("global_one")).toMatchObject({ tier: "custom", scope: "global" });
    expect(body.filter((t) => t.state === "broken")).toEqual([expect.objectContaining({ scope: "project", folder: join(projectTools(h), "bad"), error: "tool.json must hold a JSON object" })]);
  });

  it("runs two calls of one response on the same file one after another when tool.json declares touches: no update is lost", async () => {
    h = await createRuntimeHarness({ files: { "notes.txt": "" } });
    // Read, then hold until the other call has read too (or 500 ms): two calls at once both
    // append to what they read, and one line is lost; one after another, both lines stay.
    const body = `
      const fs = require("node:fs"), path = require("node:path");
      const file = path.resolve(input._cwd, input.file);
      const before = fs.readFileSync(file, "utf8");
      fs.writeFileSync(file + ".read." + input.line, "");
      const readers = () => fs.readdirSync(path.dirname(file)).filter((n) => n.startsWith(path.basename(file) + ".read.")).length;
      for (let waited = 0; readers() < 2 && waited < 500; waited += 10) await new Promise((r) => setTimeout(r, 10));
      fs.writeFileSync(file, before + input.line + "\\n");
      return "appended " + input.line;`;
    const properties = { file: { type: "string" }, line: { type: "string" } };
    writeTool(projectTools(h), { name: "append_line", properties, required: ["file", "line"], touches: ["file"], body });
    h.llm.enqueue(reply().tool("tool_activate", { name: "append_line" }).stop());
    h.llm.enqueue(reply().tool("append_line", { file: "notes.txt", line: "first" }).tool("append_line", { file: h.ws.path("notes.txt"), line: "second" }).stop());
    h.llm.enqueue(reply().text("done").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    expect((await (await h.runtime.sessions.send(session.id, "append both")).result).content).toBe("done");
    expect(readFileSync(h.ws.path("notes.txt"), "utf8")).toBe("first\nsecond\n");
  });
});
