import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { rmSync, writeFileSync } from "node:fs";
import type { AgentConfig } from "../../../src/config/types.js";
import { builtinDefaultAgent } from "../../../src/config/defaults.js";
import { memoryLogger } from "../../../src/base/log.js";
import { createCustomToolSource, type FolderToolSource } from "../../../src/tools/custom/source.js";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";
import { writeTool } from "./tool-folders.js";

describe("custom tool discovery", () => {
  let h: ToolHarness;
  let log: ReturnType<typeof memoryLogger>;
  let source: FolderToolSource;
  let agent: AgentConfig;
  let dirs: { agent: string; project: string; global: string };

  beforeEach(async () => {
    h = await createToolHarness();
    log = memoryLogger();
    const config = h.config;
    source = createCustomToolSource({ config, log, resources: h.runtimeResources });
    agent = { ...builtinDefaultAgent(), name: "writer", agentFolder: h.ws.path(".veil", "agents", "writer"), source: "project" };
    dirs = { agent: join(agent.agentFolder!, "tools"), project: h.ws.path(".veil", "tools"), global: join(config.paths.homeDir, "tools") };
  });
  afterEach(async () => h.close());

  it("finds tools at all three tiers; a higher tier overrides a lower one by name", async () => {
    writeTool(dirs.global, { name: "shared", description: "global copy" });
    writeTool(dirs.global, { name: "only_global" });
    writeTool(dirs.project, { name: "shared", description: "project copy" }, "shared-folder");
    writeTool(dirs.project, { name: "only_project" });
    writeTool(dirs.agent, { name: "shared", description: "agent copy" });
    writeTool(dirs.agent, { name: "only_agent" });

    const tools = await source.discover(agent);
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect([...byName.keys()].sort()).toEqual(["only_agent", "only_global", "only_project", "shared"]);
    expect(byName.get("shared")!.description).toBe("agent copy");
    expect(byName.get("shared")!.source).toEqual({ scope: "agent", folder: join(dirs.agent, "shared") });
    expect(byName.get("only_project")!.source?.scope).toBe("project");
    expect(byName.get("only_global")!.source?.scope).toBe("global");
    expect(byName.get("only_agent")!.tier).toBe("custom");

    // Another agent does not see the agent-level tools; the project copy wins for it.
    const other = await source.discover({ ...builtinDefaultAgent() });
    const otherByName = new Map(other.map((t) => [t.name, t]));
    expect(otherByName.has("only_agent")).toBe(false);
    expect(otherByName.get("shared")!.description).toBe("project copy");
  });

  it("uses the manifest timeout (default 30 s) as timeoutMs", async () => {
    writeTool(dirs.project, { name: "quick", timeout: 2.5 });
    writeTool(dirs.project, { name: "plain" });
    const tools = await source.discover(agent);
    expect(tools.find((t) => t.name === "quick")!.timeoutMs).toBe(2500);
    expect(tools.find((t) => t.name === "plain")!.timeoutMs).toBe(30_000);
  });

  it("skips broken folders with a clear reason, logs each once, and keeps the good ones", async () => {
    writeTool(dirs.project, { name: "good" });
    writeTool(dirs.project, { name: "bad_json", manifestText: "{ not json" });
    writeTool(dirs.project, { name: "underscore", properties: { _cwd: { type: "string" } } });
    writeTool(dirs.project, { name: "Bad Name!" }, "bad_name");
    writeTool(dirs.project, { name: "bad_schema", manifestText: JSON.stringify({ name: "bad_schema", description: "x", input_schema: { type: "object", properties: { a: { type: "strng" } } } }) });
    const noIndex = writeTool(dirs.project, { name: "no_index" });
    rmSync(join(noIndex, "index.js"));
    writeTool(dirs.project, { name: "bad_touches", properties: { file: { type: "string" } }, touches: ["path"] });

    const tools = await source.discover(agent);
    expect(tools.map((t) => t.name)).toEqual(["good"]);
    const broken = source.broken(agent);
    const reasons = Object.fromEntries(broken.map((b) => [b.folder.split("/").pop(), `${b.file} ${b.reason}`]));
    expect(Object.keys(reasons).sort()).toEqual(["bad_json", "bad_name", "bad_schema", "bad_touches", "no_index", "underscore"]);
    expect(reasons.bad_touches).toMatch(/"touches" names "path", which the input schema does not have/);
    expect(reasons.bad_json).toMatch(/tool\.json is not valid JSON/);
    expect(reasons.underscore).toMatch(/"_cwd" starts with "_"/);
    expect(reasons.bad_name).toMatch(/snake_case/);
    expect(reasons.bad_schema).toMatch(/not a valid JSON Schema/);
    expect(reasons.no_index).toMatch(/index\.js is missing/);

    const warnings = () => log.entries.filter((e) => e.level === "warn" && e.message.startsWith("custom tool skipped"));
    expect(warnings()).toHaveLength(6);
    await source.discover(agent);
    expect(warnings()).toHaveLength(6); // unchanged folders are not re-reported
  });

  it("sees a tool added, changed or removed on disk at the next discover() without a restart", async () => {
    expect(await source.discover(agent)).toEqual([]);
    const folder = writeTool(dirs.project, { name: "late", description: "first version" });
    expect((await source.discover(agent)).map((t) => t.description)).toEqual(["first version"]);
    writeFileSync(join(folder, "tool.json"), JSON.stringify({ name: "late", description: "second version, longer", input_schema: { type: "object" } }));
    expect((await source.discover(agent)).map((t) => t.description)).toEqual(["second version, longer"]);
    rmSync(folder, { recursive: true });
    expect(await source.discover(agent)).toEqual([]);
  });

  it("returns the same compiled tool object while the folder is unchanged", async () => {
    writeTool(dirs.project, { name: "stable" });
    const [first] = await source.discover(agent);
    const [second] = await source.discover(agent);
    expect(second).toBe(first);
  });

  it("validates input with the tool.json schema and phrases errors for the model", async () => {
    writeTool(dirs.project, { name: "typed", properties: { message: { type: "string" }, count: { type: "integer" } }, required: ["message"] });
    const [tool] = await source.discover(agent);
    expect(tool!.validate({ message: "hi", count: 2 })).toBeNull();
    expect(tool!.validate({ count: 2 })).toMatch(/missing required field "message"/);
    expect(tool!.validate({ message: 5 })).toMatch(/"message" must be string/);
    const result = await h.call(tool!, { count: "x" });
    expect(result.success).toBe(false);
    expect(result.output).toMatch(/^Error: VALIDATION_ERROR — /);
  });

  it("warns once at load when _remoteMethodExecution is used with a timeout below the rule of thumb", async () => {
    writeTool(dirs.project, { name: "asks_ui", timeout: 30, body: "return await input._remoteMethodExecution({ method: 'ask', data: {} });" });
    writeTool(dirs.project, { name: "asks_ui_ok", timeout: 125, body: "return await input._remoteMethodExecution({ method: 'ask', data: {} });" });
    await source.discover(agent);
    await source.discover(agent);
    const warnings = log.entries.filter((e) => e.message.includes("Rule of thumb"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toContain('"asks_ui"');
    expect(warnings[0]!.message).toContain("timeoutMs / 1000 + 5");
  });
});
