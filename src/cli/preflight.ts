import type { VeilConfig } from "../config/types.js";
import { VeilError } from "../errors.js";
import { checkModelKeyReady, pickModelKey } from "../llm/models.js";

/**
 * A one-line warning for `veil serve` when the default model cannot be reached (no model, no
 * provider for it, its key unset): sessions still work; chat cannot. A cc/ default is checked
 * by its engine at the first turn.
 */
export function modelWarning(config: VeilConfig): string | undefined {
  try {
    const key = pickModelKey({ settings: config.settings });
    if (!key.startsWith("cc/")) checkModelKeyReady(key, config.settings, config.env);
    return undefined;
  } catch (error) {
    return error instanceof VeilError ? error.message : String(error);
  }
}
