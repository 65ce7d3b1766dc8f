import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ModeConfig } from "../../../src/config/types.js";
import { builtinDefaultAgent, defaultMode } from "../../../src/config/defaults.js";
import { memoryLogger } from "../../../src/base/log.js";
import { allBuiltinTools as builtinTools } from "../../../src/core/builtins.js";
import { toolActivate } from "../../../src/tools/builtin/tool-activate.js";
import { createCustomToolSource } from "../../../src/tools/custom/source.js";
import { SessionToolset } from "../../../src/tools/registry.js";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";
import { writeTool } from "../custom/tool-folders.js";

describe("tool_activate", () => {
  let h: ToolHarness;

  beforeEach(async () => {
    h = await createToolHarness();
    writeTool(h.ws.path(".veil", "tools"), { name: "echo_upper", description: "Return the input string uppercased." });
    writeTool(h.ws.path(".veil", "tools"), { name: "other_tool", description: "Something else." });
  });
  afterEach(async () => h.close());

  const toolset = async (mode: Partial<ModeConfig> = {}) => {
    const agent = { ...builtinDefaultAgent(), name: "worker", modes: { chat: { ...defaultMode(), ...mode } } };
    const source = createCustomToolSource({ config: h.config, log: memoryLogger(), resources: h.runtimeResources });
    return SessionToolset.create({ builtins: builtinTools(), custom: await source.discover(agent), agent, mode: "chat", sessionId: h.sessionId, store: h.store, log: memoryLogger(), config: h.config });
  };

  it('activates a custom tool: { "activated": name } and it joins tools[]', async () => {
    const set = await toolset();
    const result = await h.call(toolActivate, { name: "echo_upper" }, { services: { toolset: set } });
    expect(result).toMatchObject({ output: '{"activated":"echo_upper"}', success: true });
    expect(set.specs().map((s) => s.name)).toContain("echo_upper");
    expect(set.specs().map((s) => s.name)).not.toContain("other_tool");
  });

  it("answers TOOL_NOT_FOUND with a tool_search hint for an unknown name", async () => {
    const set = await toolset();
    const result = await h.call(toolActivate, { name: "does_not_exist" }, { services: { toolset: set } });
    expect(result.success).toBe(false);
    expect(result.output).toBe('Error: TOOL_NOT_FOUND — no custom tool named "does_not_exist"; use tool_search to find one');
  });

  it("answers PERMISSION_DENIED (not a silent drop) for a tool the mode does not allow", async () => {
    const set = await toolset({ tools: ["echo_upper"] });
    const result = await h.call(toolActivate, { name: "other_tool" }, { services: { toolset: set } });
    expect(result.output).toBe('Error: PERMISSION_DENIED — tool "other_tool" is not in the tools allowlist of agent "worker" (mode "chat")');
    expect(set.isActivated("other_tool")).toBe(false);
  });

  it("treats a built-in name as an already-active success", async () => {
    const set = await toolset();
    const result = await h.call(toolActivate, { name: "sleep" }, { services: { toolset: set } });
    expect(result).toMatchObject({ output: '{"activated":"sleep"}', success: true });
  });

  it("rejects a missing name with a validation error", async () => {
    const set = await toolset();
    const result = await h.call(toolActivate, {}, { services: { toolset: set } });
    expect(result.output).toMatch(/^Error: VALIDATION_ERROR — missing required field "name"/);
  });
});
