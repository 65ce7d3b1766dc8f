import { describe, expect, it } from "vitest";
import { defaultSettings } from "../../src/config/defaults.js";
import type { Settings } from "../../src/config/types.js";
import { VeilError } from "../../src/errors.js";
import { fallbackChain, modelInfo, pickModelKey, resolveModelKey } from "../../src/llm/models.js";

function settings(over: Partial<Settings> = {}): Settings {
  return {
    ...defaultSettings(),
    providers: {
      openrouter: { type: "openai", baseUrl: "https://or.example/api/v1", apiKeyEnv: "OPENROUTER_API_KEY" },
      local: { type: "openai", baseUrl: "http://127.0.0.1:11434/v1", apiKey: "none" },
    },
    defaultProvider: "openrouter",
    ...over,
  };
}

function thrown(fn: () => unknown): VeilError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(VeilError);
    return error as VeilError;
  }
  throw new Error("expected a throw");
}

describe("resolveModelKey", () => {
  it("sends P/rest to provider P with model id rest", () => {
    expect(resolveModelKey("local/qwen3:8b", settings())).toMatchObject({ key: "local/qwen3:8b", providerName: "local", modelId: "qwen3:8b" });
    expect(resolveModelKey("openrouter/openai/gpt-4.1-mini", settings())).toMatchObject({ providerName: "openrouter", modelId: "openai/gpt-4.1-mini" });
  });

  it("sends any other key to defaultProvider unchanged", () => {
    const resolved = resolveModelKey("google/gemini-3-flash-preview", settings());
    expect(resolved).toMatchObject({ providerName: "openrouter", modelId: "google/gemini-3-flash-preview" });
    expect(resolved.provider.baseUrl).toBe("https://or.example/api/v1");
    expect(resolveModelKey("gpt-4o", settings())).toMatchObject({ providerName: "openrouter", modelId: "gpt-4o" });
  });

  it("uses the only configured provider when no defaultProvider is set", () => {
    const s = settings({ defaultProvider: undefined, providers: { env: { type: "openai", baseUrl: "http://x/v1" } } });
    expect(resolveModelKey("some-model", s)).toMatchObject({ providerName: "env", modelId: "some-model" });
  });

  it("names the key when no provider fits", () => {
    const error = thrown(() => resolveModelKey("mystery/model", settings({ defaultProvider: undefined })));
    expect(error.code).toBe("CONFIG_ERROR");
    expect(error.message).toContain("mystery/model");
    expect(error.message).toContain("openrouter, local");
    const none = thrown(() => resolveModelKey("m", settings({ providers: {}, defaultProvider: undefined })));
    expect(none.message).toContain("no providers are configured");
    const bad = thrown(() => resolveModelKey("m", settings({ defaultProvider: "gone" })));
    expect(bad.message).toContain('defaultProvider "gone"');
  });

  it("rejects an empty key with MODEL_NOT_FOUND", () => {
    expect(thrown(() => resolveModelKey(" ", settings())).code).toBe("MODEL_NOT_FOUND");
  });
});

describe("pickModelKey", () => {
  it("prefers per-call > session > agent > settings", () => {
    const s = { defaultModel: "d" };
    expect(pickModelKey({ perCall: "p", session: "s", agent: "a", settings: s })).toBe("p");
    expect(pickModelKey({ perCall: null, session: "s", agent: "a", settings: s })).toBe("s");
    expect(pickModelKey({ agent: "a", settings: s })).toBe("a");
    expect(pickModelKey({ settings: s })).toBe("d");
  });

  it("throws CONFIG_ERROR with guidance when nothing is set", () => {
    const error = thrown(() => pickModelKey({ settings: {} }));
    expect(error.code).toBe("CONFIG_ERROR");
    expect(error.message).toBe("no model configured: set defaultModel in .veil/settings.json or VEIL_MODEL");
  });
});

describe("fallbackChain and modelInfo", () => {
  it("chains the model's own fallbacks, then settings.fallbackModels, without repeats", () => {
    const models = { a: { input_modalities: ["text" as const], context_window: 1000, fallbacks: ["b", "c"] } };
    expect(fallbackChain("a", { fallbackModels: ["c", "d", "a"] }, models)).toEqual(["a", "b", "c", "d"]);
    expect(fallbackChain("z", { fallbackModels: [] }, models)).toEqual(["z"]);
  });

  it("defaults unknown models to text-only with the default window", () => {
    expect(modelInfo("unknown", {})).toEqual({ input_modalities: ["text"], context_window: 128_000 });
    expect(modelInfo("v", { v: { input_modalities: ["text", "image"], context_window: 32_000 } }).input_modalities).toEqual(["text", "image"]);
  });
});
