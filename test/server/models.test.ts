import { afterEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("GET /v1/models", () => {
  it("lists defaultModel, fallbackModels, models.json keys and agent/<name> through the official openai client", async () => {
    h = await createRuntimeHarness({
      settings: {
        providers: { local: { type: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKey: "none" } },
        defaultModel: "local/qwen3:8b",
        fallbackModels: ["openrouter/openai/gpt-4.1-mini", "local/qwen3:8b"],
      },
      models: { "local/vision": { input_modalities: ["text", "image"], context_window: 32000 }, "cc/sonnet": { input_modalities: ["text"], context_window: 200000 } },
      files: { ".veil/agents/researcher/agent.json": JSON.stringify({ description: "digs" }) },
      env: { VEIL_MODEL: "" },
    });
    const server = await h.serve();
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_SECRET, maxRetries: 0 });
    const ids: string[] = [];
    const owners: Record<string, string> = {};
    for await (const model of client.models.list()) {
      ids.push(model.id);
      owners[model.id] = model.owned_by;
      expect(model.object).toBe("model");
      expect(typeof model.created).toBe("number");
    }
    expect(ids).toEqual(["local/qwen3:8b", "openrouter/openai/gpt-4.1-mini", "local/vision", "cc/sonnet", "agent/default", "agent/researcher"]);
    expect(owners).toMatchObject({ "local/qwen3:8b": "local", "cc/sonnet": "claude-cli", "agent/researcher": "veil" });

    const one = await client.models.retrieve("agent/researcher");
    expect(one).toMatchObject({ id: "agent/researcher", object: "model", owned_by: "veil" });
    await expect(client.models.retrieve("nope")).rejects.toMatchObject({ status: 404 });
  });

  it("needs the bearer secret", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    expect((await fetch(`${server.url}/v1/models`)).status).toBe(401);
    const listed = (await (await server.fetch("/v1/models")).json()) as { object: string; data: { id: string }[] };
    expect(listed.object).toBe("list");
    expect(listed.data.map((m) => m.id)).toEqual(["fake-model", "agent/default"]);
  });
});
