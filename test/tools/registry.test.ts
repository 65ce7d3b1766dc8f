import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import type { AgentConfig, ModeConfig } from "../../src/config/types.js";
import { builtinDefaultAgent, defaultMode } from "../../src/config/defaults.js";
import { memoryLogger } from "../../src/base/log.js";
import { allBuiltinTools as builtinTools } from "../../src/core/builtins.js";
import { describeTools } from "../../src/tools/catalog.js";
import { createCustomToolSource, type FolderToolSource } from "../../src/tools/custom/source.js";
import { SessionToolset } from "../../src/tools/registry.js";
import type { RegisteredTool } from "../../src/tools/types.js";
import { createToolHarness, type ToolHarness } from "../helpers/tool-context.js";
import { writeTool } from "./custom/tool-folders.js";

describe("SessionToolset: tiers, activation and permissions", () => {
  let h: ToolHarness;
  let source: FolderToolSource;
  let custom: RegisteredTool[];
  const builtins = builtinTools();

  beforeEach(async () => {
    h = await createToolHarness();
    const dir = h.ws.path(".veil", "tools");
    writeTool(dir, { name: "echo_upper", description: "Return the input string uppercased.\nSecond line is not in the summary." });
    writeTool(dir, { name: "render_layout", description: "Render a page layout." });
    writeTool(dir, { name: "secret_tool", description: "Nobody may use this." });
    source = createCustomToolSource({ config: h.config, log: memoryLogger(), resources: h.runtimeResources });
    custom = await source.discover(builtinDefaultAgent());
  });
  afterEach(async () => h.close());

  const agentWith = (mode: Partial<ModeConfig>): AgentConfig => ({ ...builtinDefaultAgent(), name: "tester", modes: { chat: { ...defaultMode(), ...mode } } });
  const makeSet = async (agent: AgentConfig, log = memoryLogger()) =>
    SessionToolset.create({ builtins, custom, agent, mode: "chat", sessionId: h.sessionId, store: h.store, log, config: h.config });
  const specNames = (set: SessionToolset) => set.specs().map((s) => s.name);

  it("sends built-ins in tools[], lists custom tools only in the summary, until activated", async () => {
    const set = await makeSet(agentWith({}));
    expect(specNames(set)).toEqual(builtins.map((b) => b.name));
    expect(specNames(set)).toContain("tool_search");
    expect(specNames(set)).toContain("tool_activate");
    const summary = set.summary();
    expect(summary).toContain("- echo_upper: Return the input string uppercased.");
    expect(summary).not.toContain("Second line");
    expect(summary).toContain("- render_layout: Render a page layout.");

    expect(set.resolve("echo_upper")).toMatchObject({ ok: false, code: "TOOL_NOT_FOUND" });
    expect(await set.activate("echo_upper")).toEqual({ ok: true, name: "echo_upper", already: false });
    expect(specNames(set)).toContain("echo_upper");
    expect(set.specs().find((s) => s.name === "echo_upper")!.parameters).toEqual(custom.find((t) => t.name === "echo_upper")!.inputSchema);
    expect(set.summary()).not.toContain("echo_upper");
    expect(set.resolve("echo_upper")).toMatchObject({ ok: true });
    expect(await set.activate("echo_upper")).toEqual({ ok: true, name: "echo_upper", already: true });
  });

  it("keeps activations for the session across runs", async () => {
    const first = await makeSet(agentWith({}));
    await first.activate("render_layout");
    const next = await makeSet(agentWith({}));
    expect(next.isActivated("render_layout")).toBe(true);
    expect(specNames(next)).toContain("render_layout");
  });

  it("answers unknown names with TOOL_NOT_FOUND and a tool_search hint; built-ins activate as a no-op", async () => {
    const set = await makeSet(agentWith({}));
    const unknown = await set.activate("nope");
    expect(unknown).toMatchObject({ ok: false, code: "TOOL_NOT_FOUND" });
    expect(!unknown.ok && unknown.message).toContain("tool_search");
    expect(await set.activate("sleep")).toEqual({ ok: true, name: "sleep", already: true });
    expect(specNames(set)).toEqual(builtins.map((b) => b.name));
  });

  it("applies the allowlist to built-ins and custom tools at tools[], activation and every call", async () => {
    const set = await makeSet(agentWith({ tools: ["sleep", "echo_upper"] }));
    // tool_search / tool_activate come with an allowlisted custom tool.
    expect(specNames(set).sort()).toEqual(["sleep", "tool_activate", "tool_search"]);
    expect(set.resolve("log_write")).toMatchObject({ ok: false, code: "PERMISSION_DENIED" });
    expect(set.summary()).toContain("echo_upper");
    expect(set.summary()).not.toContain("render_layout");
    const denied = await set.activate("render_layout");
    expect(denied).toMatchObject({ ok: false, code: "PERMISSION_DENIED" });
    expect(!denied.ok && denied.message).toContain('not in the tools allowlist of agent "tester"');
    expect(set.searchable().map((t) => t.name).sort()).toEqual(["echo_upper", "sleep", "tool_activate", "tool_search"]);
    expect(await set.activate("echo_upper")).toMatchObject({ ok: true });
    expect(set.resolve("echo_upper")).toMatchObject({ ok: true });
  });

  it("without a custom tool in the allowlist, tool_search and tool_activate stay out", async () => {
    const set = await makeSet(agentWith({ tools: ["sleep"] }));
    expect(specNames(set)).toEqual(["sleep"]);
    expect(set.summary()).toBe("");
  });

  it("lets disallowedTools win over the allowlist and over earlier activations", async () => {
    const open = await makeSet(agentWith({}));
    await open.activate("secret_tool");
    const set = await makeSet(agentWith({ tools: ["sleep", "secret_tool"], disallowedTools: ["secret_tool", "sleep"] }));
    expect(specNames(set)).toEqual([]);
    expect(set.resolve("sleep")).toMatchObject({ ok: false, code: "PERMISSION_DENIED" });
    const resolved = set.resolve("secret_tool");
    expect(resolved).toMatchObject({ ok: false, code: "PERMISSION_DENIED" });
    expect(!resolved.ok && resolved.message).toContain("disallowedTools");
    expect(await set.activate("secret_tool")).toMatchObject({ ok: false, code: "PERMISSION_DENIED" });
  });

  it("pre-activates custom tools from turn one and omits them from the summary; logs and skips bad entries", async () => {
    const log = memoryLogger();
    const agent = agentWith({ preActivatedTools: ["render_layout", "bash_like_missing", "sleep", "secret_tool"], disallowedTools: ["secret_tool"] });
    const set = await makeSet(agent, log);
    expect(specNames(set)).toContain("render_layout");
    expect(specNames(set)).not.toContain("secret_tool");
    expect(set.summary()).not.toContain("render_layout");
    expect(set.summary()).toContain("echo_upper");
    expect(set.resolve("render_layout")).toMatchObject({ ok: true });
    const infos = log.entries.filter((e) => e.level === "info").map((e) => e.message);
    const warns = log.entries.filter((e) => e.level === "warn").map((e) => e.message);
    expect(infos).toEqual([expect.stringContaining('"sleep" is a built-in tool')]);
    expect(warns).toEqual([expect.stringContaining('no custom tool named "bash_like_missing"'), expect.stringContaining('"secret_tool" is in disallowedTools')]);
  });

  it("says which paths a call writes: write_file and edit_file their file, memory_write its MEMORY.md, others and failing calls none", async () => {
    const set = await makeSet(agentWith({}));
    const memoryDir = h.config.paths.memoryDir;
    const call = (name: string, args: unknown) => set.touches({ name, arguments: typeof args === "string" ? args : JSON.stringify(args) });
    expect(call("write_file", { file: "src/a.txt", content: "x" })).toEqual([h.ws.path("src", "a.txt")]);
    expect(call("edit_file", { file: h.ws.path("src", "..", "src", "a.txt"), old_string: "a", new_string: "b" })).toEqual([h.ws.path("src", "a.txt")]);
    expect(call("memory_write", { content: "fact" })).toEqual([join(memoryDir, "agents", "tester", "MEMORY.md")]);
    expect(call("memory_write", { content: "fact", scope: "global" })).toEqual([join(memoryDir, "MEMORY.md")]);
    expect(call("read_file", { file: "src/a.txt" })).toEqual([]);
    expect(call("bash", { command: "echo hi > a.txt" })).toEqual([]);
    expect(call("write_file", '{"file":"a.txt"')).toEqual([]);
    expect(call("write_file", { file: "a.txt" })).toEqual([]);
    expect(call("write_file", { file: "", content: "x" })).toEqual([]);
    expect(call("no_such_tool", { file: "a.txt" })).toEqual([]);
  });

  it("describeTools lists tiers, scopes and states for GET /tools", async () => {
    writeTool(h.ws.path(".veil", "tools"), { name: "broken_one", manifestText: "{" });
    const agent = agentWith({ tools: ["sleep", "echo_upper", "render_layout"], preActivatedTools: ["render_layout"] });
    const listing = await describeTools({ builtins, customTools: source, agent });
    const byName = new Map(listing.tools.map((t) => [t.name, t]));
    expect(byName.get("sleep")).toMatchObject({ tier: "builtin", state: "always" });
    expect(byName.get("log_write")).toMatchObject({ tier: "builtin", state: "forbidden" });
    expect(byName.get("tool_activate")).toMatchObject({ state: "always" });
    expect(byName.get("echo_upper")).toMatchObject({ tier: "custom", scope: "project", state: "available", folder: h.ws.path(".veil", "tools", "echo_upper") });
    expect(byName.get("render_layout")).toMatchObject({ state: "pre-activated" });
    expect(byName.get("secret_tool")).toMatchObject({ state: "forbidden" });
    expect(byName.get("echo_upper")!.input_schema).toMatchObject({ type: "object" });
    expect(listing.broken).toEqual([expect.objectContaining({ folder: h.ws.path(".veil", "tools", "broken_one"), reason: expect.stringContaining("not valid JSON") })]);
  });
});
