import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { modelInfo } from "../../src/llm/models.js";
import { loadConfig } from "../../src/config/load.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
afterEach(() => ws?.cleanup());

describe("loadConfig", () => {
  it("merges defaults < $VEIL_HOME < workspace < env < CLI flags", () => {
    ws = tmpWorkspace({
      files: {
        "home/settings.json": JSON.stringify({ defaultModel: "home-model", fallbackModels: ["h1"], budget: { max_iterations: 7, max_tokens: 100 }, files: { writeRoots: ["/home-root"] } }),
        ".veil/settings.json": JSON.stringify({ defaultModel: "project-model", budget: { max_iterations: 9 } }),
      },
    });
    const config = loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home") } });
    expect(config.settings.defaultModel).toBe("project-model");
    expect(config.settings.fallbackModels).toEqual(["h1"]);
    expect(config.settings.budget).toEqual({ max_iterations: 9, max_tokens: 100 });
    expect(config.settings.files.writeRoots).toEqual(["/home-root"]);
    expect(config.settings.retry.maxRetries).toBe(2);

    const withEnv = loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home"), VEIL_BASE_URL: "http://127.0.0.1:9/v1", VEIL_MODEL: "env-model" } });
    expect(withEnv.settings.defaultModel).toBe("env-model");
    expect(withEnv.settings.defaultProvider).toBe("env");
    expect(withEnv.settings.providers.env).toMatchObject({ type: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKeyEnv: "VEIL_API_KEY" });

    const withFlags = loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home"), VEIL_MODEL: "env-model" }, overrides: { defaultModel: "flag-model" } });
    expect(withFlags.settings.defaultModel).toBe("flag-model");
    expect(Object.isFrozen(withFlags.settings)).toBe(true);
  });

  it("names the file and the field in every load error", () => {
    ws = tmpWorkspace({ files: { ".veil/settings.json": JSON.stringify({ budget: { max_iterations: "lots" } }) } });
    expect(() => loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home") } })).toThrow(/settings\.json: "budget\.max_iterations" must be integer/);
    ws.cleanup();
    ws = tmpWorkspace({ files: { ".veil/models.json": "{ nope" } });
    expect(() => loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home") } })).toThrow(/models\.json: invalid JSON/);
    ws.cleanup();
    ws = tmpWorkspace({ files: { ".veil/agents/bad/agent.json": JSON.stringify({ modes: { chat: { tools: "bash" } } }) } });
    expect(() => loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home") } })).toThrow(/agents\/bad\/agent\.json: "modes\.chat\.tools" must be array/);
    ws.cleanup();
    ws = tmpWorkspace({ files: { ".veil/settings.json": JSON.stringify({ defaultProvider: "ghost" }) } });
    expect(() => loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home") } })).toThrow(/defaultProvider "ghost"/);
  });

  it("checks settings.webhooks: hook names, URLs, event names and required fields", () => {
    const load = (webhooks: unknown) => {
      ws?.cleanup();
      ws = tmpWorkspace({ files: { ".veil/settings.json": JSON.stringify({ webhooks }) } });
      return loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home") } });
    };
    const hook = { agent: "default", secretEnv: "S", prompt: "{{body}}" };
    const out = { url: "https://hooks.example/veil", events: ["chat.done"], secretEnv: "S" };
    expect(load({ in: { github: hook }, out: [out] }).settings.webhooks).toEqual({ in: { github: hook }, out: [out] });
    expect(loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "nowhere") } }).settings.webhooks.out).toHaveLength(1);
    ws.cleanup();
    ws = tmpWorkspace({});
    expect(loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home") } }).settings.webhooks).toEqual({ in: {}, out: [] });
    expect(() => load({ out: [{ ...out, events: ["chat.started"] }] })).toThrow(/settings\.json: "webhooks\.out\.0\.events\.0" must be one of/);
    expect(() => load({ out: [{ ...out, url: "file:///etc/passwd" }] })).toThrow(/webhooks\.out\.0\.url/);
    expect(() => load({ out: [{ ...out, events: [] }] })).toThrow(/webhooks\.out\.0\.events/);
    expect(() => load({ in: { github: { agent: "default", prompt: "x" } } })).toThrow(/missing required field "secretEnv"/);
    expect(() => load({ in: { "no spaces": hook } })).toThrow(/settings\.json/);
    expect(() => load({ inbound: {} })).toThrow(/unknown field "inbound"/);
  });

  it("loads agents with AGENT.md, project over global over the built-in default", () => {
    ws = tmpWorkspace({
      files: {
        "home/agents/default/agent.json": JSON.stringify({ description: "global default" }),
        "home/agents/shared/agent.json": JSON.stringify({ description: "global shared", systemPrompt: "inline prompt" }),
        ".veil/agents/shared/agent.json": JSON.stringify({ description: "project shared", modes: { chat: { tools: ["bash"], disallowedTools: ["web_fetch"] } } }),
        ".veil/agents/shared/AGENT.md": "You are the project agent.",
      },
    });
    const config = loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home") } });
    expect(config.agents.default).toMatchObject({ description: "global default", source: "global" });
    expect(config.agents.shared).toMatchObject({ description: "project shared", source: "project", systemPrompt: "You are the project agent." });
    expect(config.agents.shared!.modes.chat).toEqual({ enabled: true, tools: ["bash"], disallowedTools: ["web_fetch"], preActivatedTools: [] });
  });

  it("gives a workspace with no .veil the built-in default agent and text-only models", () => {
    ws = tmpWorkspace({ files: { ".veil/models.json": JSON.stringify({ "p/vision": { input_modalities: ["text", "image"] } }) } });
    const config = loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "nohome") } });
    expect(config.agents.default).toMatchObject({ source: "builtin", modes: { chat: { enabled: true, tools: [] } } });
    // Entries stay as written; the catalogue and the defaults fill the rest when a model is looked up.
    expect(config.models["p/vision"]).toEqual({ input_modalities: ["text", "image"] });
    expect(modelInfo("p/vision", config.models)).toEqual({ input_modalities: ["text", "image"], context_window: 128000 });
  });
});
