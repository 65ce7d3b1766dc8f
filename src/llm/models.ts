import { defaultModelInfo } from "../config/defaults.js";
import type { ModelEntry, ModelInfo, ProviderConfig, Settings } from "../config/types.js";
import { catalogueInfo } from "./catalogue.js";
import { VeilError } from "../errors.js";
import type { ResolvedModel } from "./types.js";

type ProviderSettings = Pick<Settings, "providers" | "defaultProvider">;

/**
 * A model key → provider + wire model id. `P/rest` whose first segment names a
 * configured provider goes to `P` as `rest`; any other key goes to `defaultProvider`
 * unchanged (with a single configured provider, that one is the default).
 *
 * @example resolveModelKey("local/qwen3:8b", settings) // { providerName: "local", modelId: "qwen3:8b", … }
 */
export function resolveModelKey(key: string, settings: ProviderSettings): ResolvedModel {
  const providers = settings.providers ?? {};
  const trimmed = key.trim();
  if (!trimmed) throw new VeilError("MODEL_NOT_FOUND", "empty model key");
  const slash = trimmed.indexOf("/");
  if (slash > 0) {
    const head = trimmed.slice(0, slash);
    const rest = trimmed.slice(slash + 1);
    const provider = Object.hasOwn(providers, head) ? providers[head] : undefined;
    if (provider && rest) return { key: trimmed, providerName: head, provider, modelId: rest };
  }
  const names = Object.keys(providers);
  const fallbackName = settings.defaultProvider ?? (names.length === 1 ? names[0] : undefined);
  if (!fallbackName) {
    const known = names.length > 0 ? `configured providers: ${names.join(", ")}` : "no providers are configured";
    throw new VeilError(
      "CONFIG_ERROR",
      `model "${trimmed}": its first segment names no configured provider and no defaultProvider is set (${known}); add a provider to "providers" in .veil/settings.json or set VEIL_BASE_URL`,
      { details: { model: trimmed } },
    );
  }
  const provider = Object.hasOwn(providers, fallbackName) ? providers[fallbackName] : undefined;
  if (!provider) {
    throw new VeilError(
      "CONFIG_ERROR",
      `model "${trimmed}": defaultProvider "${fallbackName}" is not in "providers" (configured: ${names.join(", ") || "none"})`,
      { details: { model: trimmed, provider: fallbackName } },
    );
  }
  return { key: trimmed, providerName: fallbackName, provider, modelId: trimmed };
}

/** The variable a provider's apiKeyEnv names when it is not set (the provider cannot be called); undefined when it can. */
export function unsetKeyVariable(provider: ProviderConfig, env: Record<string, string | undefined>): string | undefined {
  return provider.apiKey || !provider.apiKeyEnv || env[provider.apiKeyEnv] ? undefined : provider.apiKeyEnv;
}

/** "provider "P", whose key variable V (apiKeyEnv) is not set: <the fix>", for a provider unsetKeyVariable() names V of. */
export function unsetKeyMessage(providerName: string, variable: string): string {
  return `provider "${providerName}", whose key variable ${variable} (apiKeyEnv) is not set: export ${variable}=<key>, or set "apiKey" for that provider in .veil/settings.json`;
}

/**
 * A key that can be sent: it names a configured provider (or the default one) and that
 * provider's key is there. CONFIG_ERROR names what is missing otherwise.
 */
export function checkModelKeyReady(key: string, settings: ProviderSettings, env: Record<string, string | undefined>): ResolvedModel {
  const resolved = resolveModelKey(key, settings);
  const variable = unsetKeyVariable(resolved.provider, env);
  if (variable) {
    throw new VeilError("CONFIG_ERROR", `model "${resolved.key}" goes to ${unsetKeyMessage(resolved.providerName, variable)}`, {
      details: { model: resolved.key, provider: resolved.providerName, variable },
    });
  }
  return resolved;
}

/** Resolution order of the model for a turn: per-call > session > agent > settings. */
export function pickModelKey(sources: {
  perCall?: string | null;
  session?: string | null;
  agent?: string | null;
  settings: Pick<Settings, "defaultModel">;
}): string {
  for (const candidate of [sources.perCall, sources.session, sources.agent, sources.settings.defaultModel]) {
    if (typeof candidate === "string" && candidate.trim()) return candidate.trim();
  }
  throw new VeilError("CONFIG_ERROR", "no model configured: set defaultModel in .veil/settings.json or VEIL_MODEL");
}

/** [key, ...the model's own fallbacks, ...settings.fallbackModels], without repeats. */
export function fallbackChain(key: string, settings: Pick<Settings, "fallbackModels">, models: Record<string, ModelEntry>): string[] {
  const own = Object.hasOwn(models, key) ? (models[key]?.fallbacks ?? []) : [];
  return [...new Set([key, ...own, ...(settings.fallbackModels ?? [])].filter((k) => typeof k === "string" && k.length > 0))];
}

/**
 * What Veil knows of a model: its models.json entry (global < project, field by field) over
 * the built-in catalogue's (llm/catalogue.ts) over the defaults (text only, 128k window).
 */
export function modelInfo(key: string, models: Record<string, ModelEntry>): ModelInfo {
  const entry = Object.hasOwn(models, key) ? models[key] : undefined;
  return { ...defaultModelInfo(), ...catalogueInfo(key), ...entry };
}
