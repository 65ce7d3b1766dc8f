import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ModeConfig } from "../../../src/config/types.js";
import { builtinDefaultAgent, defaultMode } from "../../../src/config/defaults.js";
import { memoryLogger } from "../../../src/base/log.js";
import { allBuiltinTools as builtinTools } from "../../../src/core/builtins.js";
import { toolSearch } from "../../../src/tools/builtin/tool-search.js";
import { createCustomToolSource } from "../../../src/tools/custom/source.js";
import { SessionToolset } from "../../../src/tools/registry.js";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";
import { writeTool } from "../custom/tool-folders.js";

describe("tool_search", () => {
  let h: ToolHarness;

  beforeEach(async () => {
    h = await createToolHarness();
    const dir = h.ws.path(".veil", "tools");
    writeTool(dir, { name: "echo_upper", description: "Return the input string uppercased.", properties: { message: { type: "string", description: "String to uppercase" } }, required: ["message"] });
    writeTool(dir, { name: "render_layout", description: "Render a PAGE layout to PNG." });
    writeTool(dir, { name: "forbidden_echo", description: "An echo nobody may use." });
  });
  afterEach(async () => h.close());

  const toolset = async (mode: Partial<ModeConfig> = {}) => {
    const agent = { ...builtinDefaultAgent(), modes: { chat: { ...defaultMode(), ...mode } } };
    const source = createCustomToolSource({ config: h.config, log: memoryLogger(), resources: h.runtimeResources });
    return SessionToolset.create({ builtins: builtinTools(), custom: await source.discover(agent), agent, mode: "chat", sessionId: h.sessionId, store: h.store, log: memoryLogger(), config: h.config });
  };

  it("returns full schemas of matching custom tools and activates nothing", async () => {
    const set = await toolset({ disallowedTools: ["forbidden_echo"] });
    const result = await h.call(toolSearch, { query: "ECHO" }, { services: { toolset: set } });
    expect(result.success).toBe(true);
    const found: { name: string }[] = JSON.parse(result.output);
    expect(found.map((t) => t.name)).not.toContain("forbidden_echo");
    expect(found.filter((t) => t.name.includes("echo"))).toEqual([
      {
        name: "echo_upper",
        description: "Return the input string uppercased.",
        input_schema: { type: "object", properties: { message: { type: "string", description: "String to uppercase" } }, required: ["message"] },
      },
    ]);
    expect(set.isActivated("echo_upper")).toBe(false);
    expect(set.specs().map((s) => s.name)).not.toContain("echo_upper");
  });

  it("needs every word to match, in the name or the description, case-insensitively", async () => {
    const set = await toolset();
    const names = async (query: string) => JSON.parse((await h.call(toolSearch, { query }, { services: { toolset: set } })).output).map((t: { name: string }) => t.name);
    expect(await names("page png")).toEqual(["render_layout"]);
    expect(await names("render png")).toEqual(["render_layout"]);
    expect(await names("echo upper")).toEqual(["echo_upper"]);
    expect(await names("echo nobody")).toEqual(["forbidden_echo"]);
    expect(await names("page missing-word")).toEqual([]);
  });

  it("covers built-ins too", async () => {
    const set = await toolset();
    const result = await h.call(toolSearch, { query: "sleep" }, { services: { toolset: set } });
    const found = JSON.parse(result.output);
    expect(found[0].name).toBe("sleep");
    expect(found[0].input_schema.properties.seconds).toBeDefined();
  });

  it("answers TOOL_CONTEXT_INVALID without a session toolset", async () => {
    const result = await h.call(toolSearch, { query: "x" });
    expect(result.output).toMatch(/^Error: TOOL_CONTEXT_INVALID — /);
  });
});
