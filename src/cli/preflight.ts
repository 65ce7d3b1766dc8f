import type { AgentConfig, VeilConfig } from "../config/types.js";
import { VeilError } from "../errors.js";
import { pickModelKey, resolveModelKey } from "../llm/models.js";

/**
 * Checks before a turn that its model can be reached: a model is configured, its key names a
 * provider, and the provider's key variable is set. Throws CONFIG_ERROR naming the fix, so
 * `veil run` says what is missing instead of failing the turn with a provider error.
 */
export function checkModelReady(config: VeilConfig, choice: { perCall?: string; session?: string | null; agent?: AgentConfig }): string {
  const key = pickModelKey({ perCall: choice.perCall, session: choice.session, agent: choice.agent?.model, settings: config.settings });
  // The claude-cli engine checks its own installation and key.
  if (key.startsWith("cc/")) return key;
  const resolved = resolveModelKey(key, config.settings);
  const { provider, providerName } = resolved;
  if (!provider.apiKey && provider.apiKeyEnv && !config.env[provider.apiKeyEnv]) {
    throw new VeilError(
      "CONFIG_ERROR",
      `model "${key}" goes to provider "${providerName}", whose key variable ${provider.apiKeyEnv} (apiKeyEnv) is not set: export ${provider.apiKeyEnv}=<key>, or set "apiKey" for that provider in .veil/settings.json`,
      { details: { model: key, provider: providerName, variable: provider.apiKeyEnv } },
    );
  }
  return key;
}

/** A one-line warning for `veil serve` when no model is configured (sessions still work; chat cannot). */
export function modelWarning(config: VeilConfig): string | undefined {
  try {
    checkModelReady(config, {});
    return undefined;
  } catch (error) {
    return error instanceof VeilError ? error.message : String(error);
  }
}
