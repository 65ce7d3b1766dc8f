import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { loadConfig } from "../../src/config/load.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
afterEach(() => ws?.cleanup());

function load(files: Record<string, string>) {
  ws = tmpWorkspace({ files });
  return loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home") } });
}

const agentFile = (body: object) => ({ ".veil/agents/coder/agent.json": JSON.stringify({ name: "coder", ...body }) });

describe("settings of compaction, reasoning style and cost", () => {
  it("defaults defaultCompaction to 0.8 / 20000 and merges settings and agent overrides", () => {
    expect(load({}).settings.defaultCompaction).toEqual({ autoThreshold: 0.8, keepRecentTokens: 20_000 });
    ws.cleanup();
    const config = load({
      ".veil/settings.json": JSON.stringify({ defaultCompaction: { keepRecentTokens: 4000, summarizerModel: "local/small" } }),
      ...agentFile({ compaction: { autoThreshold: 0.5 } }),
    });
    expect(config.settings.defaultCompaction).toEqual({ autoThreshold: 0.8, keepRecentTokens: 4000, summarizerModel: "local/small" });
    expect(config.agents.coder!.compaction).toEqual({ autoThreshold: 0.5 });
    expect(config.agents.default!.compaction).toBeUndefined();
  });

  it.each([
    [{ defaultCompaction: { autoThreshold: 0 } }, /settings\.json: "defaultCompaction\.autoThreshold" must be > 0/],
    [{ defaultCompaction: { autoThreshold: 1.5 } }, /settings\.json: "defaultCompaction\.autoThreshold" must be <= 1/],
    [{ defaultCompaction: { keepRecentTokens: -1 } }, /settings\.json: "defaultCompaction\.keepRecentTokens" must be >= 0/],
    [{ defaultCompaction: { keepRecent: 5 } }, /settings\.json: unknown field "keepRecent"/],
    [{ providers: { p: { type: "openai", baseUrl: "http://127.0.0.1:1/v1", reasoning: "deepseek" } } }, /settings\.json: "providers\.p\.reasoning" must be one of \["openai","openrouter","anthropic","none"\]/],
  ])("refuses bad settings %j naming the file and the field", (settings, message) => {
    expect(() => load({ ".veil/settings.json": JSON.stringify(settings) })).toThrow(message);
  });

  it("refuses a bad agent compaction or reasoning effort naming agent.json and the field", () => {
    expect(() => load(agentFile({ compaction: { autoThreshold: -0.1 } }))).toThrow(/agent\.json: "compaction\.autoThreshold" must be > 0/);
    ws.cleanup();
    expect(() => load(agentFile({ compaction: { keepRecentTokens: -5 } }))).toThrow(/agent\.json: "compaction\.keepRecentTokens" must be >= 0/);
    ws.cleanup();
    expect(() => load(agentFile({ reasoning: { effort: "maximal" } }))).toThrow(/agent\.json: "reasoning\.effort" must be one of \["none","minimal","low","medium","high","xhigh"\]/);
  });

  it("accepts a provider reasoning style and models.json cost; refuses a negative or partial price", () => {
    const config = load({
      ".veil/settings.json": JSON.stringify({ providers: { p: { type: "openai", baseUrl: "http://127.0.0.1:1/v1", reasoning: "anthropic" } } }),
      ".veil/models.json": JSON.stringify({ "p/m": { context_window: 16000, cost: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 } } }),
    });
    expect(config.settings.providers.p!.reasoning).toBe("anthropic");
    expect(config.models["p/m"]!.cost).toEqual({ input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 });
    ws.cleanup();
    expect(() => load({ ".veil/models.json": JSON.stringify({ m: { cost: { input: -1, output: 2 } } }) })).toThrow(/models\.json: "m\.cost\.input" must be >= 0/);
    ws.cleanup();
    expect(() => load({ ".veil/models.json": JSON.stringify({ m: { cost: { input: 1 } } }) })).toThrow(/models\.json: missing required field "output"/);
  });
});
