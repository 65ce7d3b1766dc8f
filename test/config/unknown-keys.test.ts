import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { memoryLogger } from "../../src/base/log.js";
import { loadAgents, loadConfig } from "../../src/config/load.js";
import { AgentFileSchema, ModelsFileSchema, SettingsFileSchema } from "../../src/config/schemas.js";
import { closestKey, findUnknownKeys, warnUnknownKeysOnce, type UnknownKeyNotice } from "../../src/config/unknown-keys.js";
import { readMcpJson, resolveMcpServers } from "../../src/tools/mcp/config.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
afterEach(() => ws?.cleanup());

function load(files: Record<string, string>): { notices: UnknownKeyNotice[]; load(): ReturnType<typeof loadConfig> } {
  ws = tmpWorkspace({ files });
  const notices: UnknownKeyNotice[] = [];
  return { notices, load: () => loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home") }, onUnknownKey: (n) => notices.push(n) }) };
}

describe("unknown keys in config files", () => {
  it("settings.json: a misspelt key is reported with the file and the closest known key, nested ones with their path; the file still loads", () => {
    const run = load({
      ".veil/settings.json": JSON.stringify({ defaultModle: "m", defaultModel: "real", budgett: { max_tokens: 5 }, retry: { maxRetrys: 4 }, limits: { maxLiveSession: 3 }, webFetch: { allowHost: ["x"] }, myToolSettings: { a: 1 } }),
    });
    const config = run.load();
    expect(config.settings.defaultModel).toBe("real");
    const file = join(ws.root, ".veil/settings.json");
    expect(run.notices).toEqual([
      { file, path: "defaultModle", suggestion: "defaultModel", refused: false },
      { file, path: "budgett", suggestion: "budget", refused: false },
      { file, path: "retry.maxRetrys", suggestion: "retry.maxRetries", refused: false },
      { file, path: "limits.maxLiveSession", suggestion: "limits.maxLiveSessions", refused: false },
      { file, path: "webFetch.allowHost", suggestion: "webFetch.allowHosts", refused: false },
      // Nothing close: reported without a guess (custom tools may read such keys from _settings).
      { file, path: "myToolSettings", refused: false },
    ]);
  });

  it("agent.json and models.json: unknown keys (top level, in modes, in a model entry) are reported; every key the loader reads is known", () => {
    const run = load({
      ".veil/agents/writer/agent.json": JSON.stringify({ description: "d", budgett: {}, modelz: "x", modes: { chat: { tool: ["bash"], enabled: true } } }),
      ".veil/models.json": JSON.stringify({ "local/qwen3:8b": { context_windw: 8000, input_modalities: ["text"] } }),
      // A file with every documented key: nothing to report.
      "home/settings.json": JSON.stringify({
        providers: { p: { type: "openai", baseUrl: "http://127.0.0.1:1/v1", apiKey: "k" } },
        defaultProvider: "p",
        fallbackModels: [],
        budget: { max_iterations: 5 },
        summarizerModel: "m",
        summarizerMaxCallsPerMinute: 2,
        defaultCompaction: { autoThreshold: 0.5 },
        files: { writeRoots: [] },
        webFetch: { allowHosts: [], maxBytes: 10, timeoutMs: 10, maxRedirects: 1 },
        webSearch: { endpoint: "http://127.0.0.1:1/" },
        retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 1 },
        limits: { maxLiveSessions: 2, maxBodyBytes: 2048 },
        wakeup: { minLoopSeconds: 1 },
        claudeCli: { redirectBasicTools: true },
        mcpServers: {},
        hooks: { PreToolUse: [{ matcher: "bash", hooks: [{ type: "command", command: "true", timeout: 1 }] }] },
        store: { type: "sqlite" },
        cluster: { leaseSeconds: 5 },
        server: { allowedOrigins: ["https://ui.example"] },
      }),
    });
    const config = run.load();
    expect(config.agents.writer!.description).toBe("d");
    const agentFile = join(ws.root, ".veil/agents/writer/agent.json");
    const modelsFile = join(ws.root, ".veil/models.json");
    expect(run.notices).toEqual([
      { file: modelsFile, path: '["local/qwen3:8b"].context_windw', suggestion: '["local/qwen3:8b"].context_window', refused: false },
      { file: agentFile, path: "budgett", suggestion: "budget", refused: false },
      { file: agentFile, path: "modelz", suggestion: "model", refused: false },
      { file: agentFile, path: "modes.chat.tool", suggestion: "modes.chat.tools", refused: false },
    ]);
  });

  it("a misspelt key where the schema refuses extra keys still fails the load, now naming the closest known key", () => {
    const run = load({ ".veil/settings.json": JSON.stringify({ budget: { max_iteration: 5 } }) });
    expect(() => run.load()).toThrow(`settings.json: unknown field "max_iteration". Unknown key "budget.max_iteration" (did you mean "budget.max_iterations"?).`);
    ws.cleanup();
    const agent = load({ ".veil/agents/a/agent.json": JSON.stringify({ reasoning: { efort: "low" } }) });
    expect(() => agent.load()).toThrow(`agent.json: unknown field "efort". Unknown key "reasoning.efort" (did you mean "reasoning.effort"?).`);
  });

  it("warnUnknownKeysOnce logs each key of each file once, however often the file is read again", () => {
    ws = tmpWorkspace({ files: { ".veil/agents/a/agent.json": JSON.stringify({ budgett: {}, descripton: "x" }) } });
    const log = memoryLogger();
    const warn = warnUnknownKeysOnce(log);
    const paths = loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home") }, onUnknownKey: warn }).paths;
    for (let i = 0; i < 3; i++) loadAgents(paths, warn);
    const file = join(ws.root, ".veil/agents/a/agent.json");
    expect(log.entries).toEqual([
      { level: "warn", message: `unknown key "budgett" in ${file} (did you mean "budget"?); Veil does not use it`, fields: { file, key: "budgett", suggestion: "budget" } },
      { level: "warn", message: `unknown key "descripton" in ${file} (did you mean "description"?); Veil does not use it`, fields: { file, key: "descripton", suggestion: "description" } },
    ]);
  });

  it(".mcp.json and settings mcpServers: unknown keys of the file and of server entries are reported; the servers still start", () => {
    ws = tmpWorkspace({ files: { ".mcp.json": JSON.stringify({ mcpServers: { files: { comand: "x", command: "node", args: [], env: { ANY_NAME: "1" } } }, mcpServer: {} }) } });
    const result = resolveMcpServers({ settingsServers: { web: { type: "http", url: "http://127.0.0.1:1/mcp", header: {} } }, mcpJson: readMcpJson(ws.root), workspace: ws.root, env: {} });
    expect(result.servers.map((s) => s.name)).toEqual(["files", "web"]);
    expect(result.unknownKeys).toEqual([
      { file: join(ws.root, ".mcp.json"), path: "mcpServers.files.comand", suggestion: "mcpServers.files.command", refused: false },
      { file: join(ws.root, ".mcp.json"), path: "mcpServer", suggestion: "mcpServers", refused: false },
      { file: "settings.json", path: "mcpServers.web.header", suggestion: "mcpServers.web.headers", refused: false },
    ]);
  });

  it("findUnknownKeys walks records and arrays; closestKey ignores case and gives up past a third of the letters", () => {
    expect(findUnknownKeys({ providers: { p: { type: "openai", baseUrl: "http://x", apiKeyEnvv: "K" } } }, SettingsFileSchema)).toEqual([
      { path: "providers.p.apiKeyEnvv", suggestion: "providers.p.apiKeyEnv", refused: true },
    ]);
    expect(findUnknownKeys({ hooks: { PreToolUse: [{ matcher: "x", hooks: [{ type: "command", command: "c", timout: 1 }] }] } }, SettingsFileSchema)).toEqual([
      { path: "hooks.PreToolUse[0].hooks[0].timout", suggestion: "hooks.PreToolUse[0].hooks[0].timeout", refused: true },
    ]);
    expect(findUnknownKeys({ m: { cost: { input: 1, output: 1 } } }, ModelsFileSchema)).toEqual([]);
    expect(findUnknownKeys({ name: "a", modes: { chat: {} } }, AgentFileSchema)).toEqual([]);
    expect(closestKey("DefaultModel", ["defaultModel", "defaultProvider"])).toBe("defaultModel");
    expect(closestKey("model", ["defaultModel"])).toBeUndefined();
    expect(closestKey("bugdet", ["budget"])).toBe("budget");
  });
});
