import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { memoryLogger } from "../../../src/base/log.js";
import { builtinDefaultAgent } from "../../../src/config/defaults.js";
import { allBuiltinTools } from "../../../src/core/builtins.js";
import { SessionToolset, SUMMARY_BUDGET_BYTES } from "../../../src/tools/registry.js";
import { withSkillTool } from "../../../src/tools/skills/skill-tool.js";
import type { Skill } from "../../../src/tools/skills/source.js";
import type { RegisteredTool } from "../../../src/tools/types.js";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";

/** An MCP-sourced custom tool (what the MCP source registers), enough for the summary. */
function mcpTool(server: string, name: string): RegisteredTool {
  return { name: `mcp__${server}__${name}`, description: `The ${name} tool of ${server}, which does a fairly long thing.`, inputSchema: { type: "object" }, readOnly: false, tier: "custom", source: { scope: "mcp", server, tool: name }, validate: () => null, execute: async () => "" };
}

function skill(name: string, description = `Use ${name} for the ${name} kind of task, with its own steps.`): Skill {
  return { name, description, scope: "project", folder: `/skills/${name}`, file: `/skills/${name}/SKILL.md`, body: "", bytes: 0, truncated: false };
}

describe("the summary's 8 KB rule with skills", () => {
  let h: ToolHarness;
  beforeEach(async () => {
    h = await createToolHarness();
  });
  afterEach(async () => h.close());

  const make = (custom: RegisteredTool[], skills: Skill[]) =>
    SessionToolset.create({ builtins: withSkillTool(allBuiltinTools(), skills), custom, agent: builtinDefaultAgent(), mode: "chat", sessionId: h.sessionId, store: h.store, log: memoryLogger(), skills, config: h.config });

  it("lists MCP tools and skills in full while both fit", async () => {
    const summary = (await make([mcpTool("small", "a"), mcpTool("small", "b")], [skill("alpha"), skill("beta")])).summary();
    expect(summary).toContain("- mcp__small__a: The a tool of small");
    expect(summary).toContain("## Skills");
    expect(summary).toContain("- alpha: Use alpha for the alpha kind of task");
    expect(summary.indexOf("## Custom tools")).toBeLessThan(summary.indexOf("## Skills"));
  });

  it("condenses MCP tools per server first when the skills tip it over, and keeps the skills' descriptions", async () => {
    const mcp = Array.from({ length: 70 }, (_, i) => mcpTool("big", `t${i}`));
    const skills = Array.from({ length: 40 }, (_, i) => skill(`skill-${i}`));
    const toolsOnly = (await make(mcp, [])).summary();
    expect(toolsOnly).toContain("- mcp__big__t0:"); // fits alone
    const summary = (await make(mcp, skills)).summary();
    expect(Buffer.byteLength(summary)).toBeLessThan(SUMMARY_BUDGET_BYTES);
    expect(summary).toContain('- mcp__big__*: 70 tools of MCP server "big"');
    expect(summary).toContain("- skill-0: Use skill-0 for the skill-0 kind of task");
  });

  it("on an engine that registers custom tools up front, drops the tools part but keeps the skills", async () => {
    const set = await make([mcpTool("small", "a")], [skill("alpha")]);
    set.registerAllUpFront();
    const summary = set.summary();
    expect(summary).not.toContain("## Custom tools");
    expect(summary.startsWith("## Skills")).toBe(true);
  });
});
