import { afterEach, describe, expect, it } from "vitest";
import { reply } from "../../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../../helpers/runtime.js";
import { SUMMARY_BUDGET_BYTES } from "../../../src/tools/registry.js";
import { EVERYTHING, nodeServer, TEST_SERVER } from "./helpers.js";

const toolNames = (body: { tools?: { function: { name: string } }[] }) => (body.tools ?? []).map((t) => t.function.name);
const systemText = (body: { messages: { role: string; content: string }[] }) => body.messages.find((m) => m.role === "system")!.content;
const toolMessages = (body: { messages: { role: string; content: unknown }[] }) => body.messages.filter((m) => m.role === "tool").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));

let h: RuntimeHarness;
afterEach(async () => h?.close());

describe("MCP tools in the four tiers", { timeout: 60_000 }, () => {
  it("summary → tool_search → tool_activate → call, with server-everything over stdio", async () => {
    h = await createRuntimeHarness({ settings: { mcpServers: { everything: nodeServer(EVERYTHING, "stdio") } } });
    h.llm.enqueue(reply().tool("mcp__everything__echo", { message: "too early" }).stop());
    h.llm.enqueue(reply().tool("tool_search", { query: "everything echo" }).stop());
    h.llm.enqueue(reply().tool("tool_activate", { name: "mcp__everything__echo" }).stop());
    h.llm.enqueue(reply().tool("mcp__everything__echo", { message: "hi" }).stop());
    h.llm.enqueue(reply().text("done").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    expect((await (await h.runtime.sessions.send(session.id, "echo hi")).result).content).toBe("done");

    const bodies = h.llm.completionRequests.map((r) => r.body);
    expect(systemText(bodies[0])).toContain("- mcp__everything__echo: Echoes back the input string");
    expect(toolNames(bodies[0]).some((n) => n.startsWith("mcp__"))).toBe(false);
    expect(toolMessages(bodies[1]).at(-1)).toBe('Error: TOOL_NOT_FOUND — custom tool "mcp__everything__echo" is not active; call tool_activate({ name: "mcp__everything__echo" }) first');
    expect(toolMessages(bodies[2]).at(-1)).toContain('"name": "mcp__everything__echo"');
    expect(toolMessages(bodies[2]).at(-1)).toContain('"Message to echo"');
    expect(toolNames(bodies[3])).toContain("mcp__everything__echo");
    expect(toolNames(bodies[3]).length).toBe(toolNames(bodies[0]).length + 1);
    expect(toolMessages(bodies[4]).at(-1)).toBe("Echo: hi");
    expect(h.events.find((e) => e.type === "tool.end" && e.toolName === "mcp__everything__echo" && e.success)).toBeTruthy();
  });

  it("preActivatedTools and disallowedTools take mcp__<server>__* and full names; images reach the model", async () => {
    h = await createRuntimeHarness({
      settings: { mcpServers: { everything: nodeServer(EVERYTHING, "stdio") } },
      models: { "fake-model": { input_modalities: ["text", "image"] } },
      files: {
        ".veil/agents/picky/agent.json": JSON.stringify({
          name: "picky",
          modes: { chat: { preActivatedTools: ["mcp__everything__*"], disallowedTools: ["mcp__everything__get-env", "mcp__everything__toggle-*"] } },
        }),
      },
    });
    h.llm.enqueue(reply().tool("mcp__everything__get-env", {}).tool("mcp__everything__get-tiny-image", {}).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "picky" });
    await (await h.runtime.sessions.send(session.id, "go")).result;
    const [first, second] = h.llm.completionRequests.map((r) => r.body);
    const names = toolNames(first);
    expect(names).toEqual(expect.arrayContaining(["mcp__everything__echo", "mcp__everything__get-tiny-image", "mcp__everything__get-sum"]));
    expect(names).not.toContain("mcp__everything__get-env");
    expect(names.filter((n) => n.startsWith("mcp__everything__toggle-"))).toEqual([]);
    const results = toolMessages(second);
    expect(results[0]).toBe('Error: PERMISSION_DENIED — tool "mcp__everything__get-env" is in disallowedTools of agent "picky" (mode "chat")');
    expect(results[1]).toContain("[image image/png attached]");
    expect(JSON.stringify(second.messages)).toContain("data:image/png;base64,iVBOR");
  });

  it("GET /tools lists MCP tools with scope mcp and the server, and failed servers as broken", async () => {
    h = await createRuntimeHarness({ settings: { mcpServers: { t: nodeServer(TEST_SERVER), dead: { command: "/nonexistent/server" } } } });
    const server = await h.serve();
    const listing = (await (await server.fetch("/tools")).json()) as Record<string, unknown>[];
    expect(listing.find((t) => t.name === "mcp__t__echo")).toMatchObject({ tier: "custom", scope: "mcp", server: "t", state: "available", description: "Echo the message back.", input_schema: { type: "object" } });
    expect(listing.find((t) => t.name === "bash")).toMatchObject({ tier: "builtin", state: "always" });
    expect(listing.filter((t) => t.state === "broken")).toEqual([{ name: null, tier: "custom", state: "broken", scope: "mcp", server: "dead", error: expect.stringContaining('MCP server "dead": could not be started') }]);
  });

  it("a dead server's tool call gets its error as the tool result; the run and other tools go on", async () => {
    h = await createRuntimeHarness({ settings: { mcpServers: { t: nodeServer(TEST_SERVER) } } });
    h.llm.enqueue(reply().tool("tool_activate", { name: "mcp__t__crash" }).stop());
    h.llm.enqueue(reply().tool("mcp__t__crash", {}).stop());
    h.llm.enqueue(reply().tool("bash", { command: "echo still fine" }).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    expect((await (await h.runtime.sessions.send(session.id, "crash it")).result).content).toBe("ok");
    const bodies = h.llm.completionRequests.map((r) => r.body);
    expect(toolMessages(bodies[2]).at(-1)).toMatch(/^Error: TOOL_ERROR — MCP server "t" failed during tools\/call "crash": exited with code 3; stderr: boom/);
    expect(toolMessages(bodies[3]).at(-1)).toContain("still fine");
  });

  it("past the 8 KB budget the summary lists servers with tool counts; tools[] is unchanged", async () => {
    h = await createRuntimeHarness({ settings: { mcpServers: { big: nodeServer(TEST_SERVER, "many:200"), small: nodeServer(TEST_SERVER) } } });
    h.llm.enqueue(reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "hi")).result;
    const body = h.llm.completionRequests[0]!.body;
    const system = systemText(body);
    expect(system).toContain('- mcp__big__*: 200 tools of MCP server "big"');
    expect(system).toContain('- mcp__small__*: 5 tools of MCP server "small"');
    expect(system).toContain("call tool_search with the server name");
    expect(system).not.toContain("mcp__big__tool_7");
    const summary = system.slice(system.indexOf("## Custom tools"));
    expect(Buffer.byteLength(summary)).toBeLessThan(SUMMARY_BUDGET_BYTES);
    expect(toolNames(body).some((n) => n.startsWith("mcp__"))).toBe(false);
  });
});
