import { describe, expect, it } from "vitest";
import { defaultSettings } from "../../../src/config/defaults.js";
import type { Settings } from "../../../src/config/types.js";
import { childEnv, modelInput, sanitizeSettings } from "../../../src/tools/custom/injected.js";

describe("what a custom tool process receives", () => {
  const settings: Settings = {
    ...defaultSettings(),
    providers: {
      a: { type: "openai", baseUrl: "http://a/v1", apiKey: "sk-a", headers: { authorization: "Bearer sk-a", "x-org": "o" } },
      b: { type: "openai", baseUrl: "http://b/v1", apiKeyEnv: "B_KEY" },
    },
    budget: { max_tokens: 1000 },
    integrations: { github: { token: "ghp_x", owner: "me" }, db: { password: "pw", api_key: "k", clientSecret: "s", host: "h" } },
  };

  it("strips every secret from _settings and keeps the rest, apiKeyEnv names included", () => {
    const clean = sanitizeSettings(settings) as any;
    expect(clean.providers.a).toEqual({ type: "openai", baseUrl: "http://a/v1", headers: { "x-org": "o" } });
    expect(clean.providers.b).toEqual({ type: "openai", baseUrl: "http://b/v1", apiKeyEnv: "B_KEY" });
    expect(clean.budget).toEqual({ max_tokens: 1000 });
    expect(clean.integrations).toEqual({ github: { owner: "me" }, db: { host: "h" } });
    expect(JSON.stringify(clean)).not.toMatch(/sk-a|ghp_x|"pw"|"k"|"s"/);
    expect((settings.providers.a as { apiKey?: string }).apiKey).toBe("sk-a"); // the original is untouched
  });

  it("drops provider key variables from the tool process environment", () => {
    const env = childEnv({ PATH: "/bin", B_KEY: "secret", VEIL_API_KEY: "x", VEIL_SECRET: "y", HOME: "/h" }, settings);
    expect(env).toEqual({ PATH: "/bin", HOME: "/h" });
  });

  it("drops _-prefixed and prototype keys from the model's input", () => {
    const input = JSON.parse('{"a":1,"_cwd":"/x","__proto__":{"polluted":true},"prototype":2,"constructor":3,"b_":4}');
    expect(modelInput(input)).toEqual({ a: 1, b_: 4 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
