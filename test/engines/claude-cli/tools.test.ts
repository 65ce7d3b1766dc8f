/**
 * CLAUDE ENGINE TESTS (real Claude Agent SDK + `claude` binary against the fake Anthropic
 * server): the tool rules of README "The claude-cli engine".
 */
import { afterEach, describe, expect, it } from "vitest";
import { message } from "../../helpers/fake-anthropic.js";
import { createEngineHarness, toolResults, type EngineHarness } from "./harness.js";

let h: EngineHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

function customTool(name: string, body: string, description = `custom ${name}`): Record<string, string> {
  return {
    [`.veil/tools/${name}/tool.json`]: JSON.stringify({ name, description, input_schema: { type: "object", properties: { input: { type: "string" } } } }),
    [`.veil/tools/${name}/index.js`]: `module.exports = async function execute({ input }) { ${body} };`,
  };
}

function toolNames(h: EngineHarness, request = 0): string[] {
  return h.api.messageRequests[request]!.body.tools.map((t: { name: string }) => t.name);
}

describe("claude-cli engine: tools", () => {
  it("registers every allowed custom tool up front; tool_search reflects, tool_activate is a no-op success, the allowlist gates custom tools only, disallowedTools gates all", async () => {
    h = await createEngineHarness({
      files: {
        ...customTool("echo_upper", "return String(input).toUpperCase();", "Uppercase the input"),
        ...customTool("other_custom", "return 'x';"),
        ...customTool("secret_tool", "return 'secret';"),
        ...customTool("snap", `return { text: "snapped", attachments: [{ type: "image", media_type: "image/png", data: "${PNG_1PX}" }] };`),
      },
      agent: { modes: { chat: { enabled: true, tools: ["bash", "echo_upper", "snap", "secret_tool"], disallowedTools: ["web_fetch", "secret_tool"], preActivatedTools: ["echo_upper"] } } },
    });
    h.api.enqueue(
      message()
        .tool("mcp__veil__echo_upper", { input: "hi" })
        .tool("mcp__veil__tool_activate", { name: "echo_upper" })
        .tool("mcp__veil__tool_search", { query: "uppercase" })
        .tool("mcp__veil__snap", {})
        .stop(),
      message().text("done").stop(),
    );
    const outcome = await h.turn("use the tools");
    expect(outcome.error).toBeUndefined();

    const names = toolNames(h);
    expect(names).toEqual(expect.arrayContaining(["mcp__veil__echo_upper", "mcp__veil__snap", "mcp__veil__bash", "mcp__veil__memory_write", "mcp__veil__agent_spawn", "mcp__veil__schedule_wakeup", "Read"]));
    expect(names).not.toContain("mcp__veil__other_custom");
    expect(names).not.toContain("mcp__veil__secret_tool");
    expect(names).not.toContain("mcp__veil__web_fetch");
    // Every custom tool is already callable: the system prompt has no "not loaded" tier-2 summary.
    const system = JSON.stringify(h.api.messageRequests[0]!.body.system);
    expect(system).not.toContain("## Custom tools");
    expect(system).not.toContain("then tool_activate");
    const schema = h.api.messageRequests[0]!.body.tools.find((t: { name: string }) => t.name === "mcp__veil__echo_upper");
    expect(schema.input_schema.properties.input.type).toBe("string");

    const results = toolResults(h);
    expect(results.echo_upper).toBe("HI");
    expect(JSON.parse(results.tool_activate!)).toEqual({ activated: "echo_upper" });
    expect(results.tool_search).toContain('"name": "echo_upper"');
    expect(results.snap).toBe("snapped");
    // The model's tool_result carries the attachment metadata as appended JSON (MCP results are text here).
    const sent = JSON.stringify(h.api.messageRequests[1]!.body.messages);
    const snapText = /snapped\\n\\n(\{.*?\}\]\})/.exec(sent)?.[1]?.replace(/\\"/g, '"');
    const described = JSON.parse(snapText!);
    expect(described.attachments[0]).toMatchObject({ type: "image", media_type: "image/png" });
    expect(described.attachments[0].path).toMatch(/\.png$/);
    expect(h.log.entries.some((e) => e.level === "info" && e.message.includes("preActivatedTools") && e.message.includes("claude-cli"))).toBe(true);
    expect(h.wire.some((e) => e.type === "tool.end" && (e as { toolName: string }).toolName.startsWith("mcp__"))).toBe(false);
  });

  it("keeps natives to the known-safe allowlist, guards collisions, and runs native Read with tool events under its own name", async () => {
    h = await createEngineHarness({
      files: { "pic.txt": "native read works\n", ...customTool("Read", "return 'custom read';") },
      claudeCli: { nativeTools: ["Read", "Bash", "Task", "CronCreate"] },
    });
    h.api.enqueue(message().tool("Read", { file_path: h.ws.path("pic.txt") }).stop(), message().text("ok").stop());
    const outcome = await h.turn("read it natively");
    expect(outcome.error).toBeUndefined();
    const names = toolNames(h);
    expect(names).toEqual(expect.arrayContaining(["Read", "Bash"]));
    expect(names).not.toContain("Task");
    expect(names).not.toContain("CronCreate");
    // Veil's bash gives way to the enabled native Bash; the custom "Read" collides with native Read.
    expect(names).not.toContain("mcp__veil__bash");
    expect(names).not.toContain("mcp__veil__Read");
    expect(h.log.entries.some((e) => e.level === "warn" && e.message.includes('custom tool "Read" collides'))).toBe(true);
    expect(h.log.entries.some((e) => e.level === "warn" && e.message.includes('"Task" is not in the known-safe'))).toBe(true);

    const types = outcome.events.map((e) => e.type).filter((t) => t !== "text_delta");
    expect(types).toEqual(["model_call_started", "tool_call_started", "model_usage", "assistant_message", "tool_started", "tool_finished", "model_call_started", "model_usage", "assistant_message", "run_ended"]);
    const end = h.wire.find((e) => e.type === "tool.end") as unknown as { toolName: string; output: string; success: boolean; toolInput: unknown; durationMs: number };
    expect(end).toMatchObject({ toolName: "Read", success: true, toolInput: { file_path: h.ws.path("pic.txt") } });
    expect(end.output).toContain("native read works");
    expect(typeof end.durationMs).toBe("number");
  });
});
