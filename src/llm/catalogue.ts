import type { ModelCost, ModelInfo } from "../config/types.js";
import { CATALOGUE } from "./catalogue-data.js";

/** One model of the built-in catalogue (catalogue-data.ts). */
export interface CatalogueEntry {
  /** OpenRouter's id, e.g. "openai/gpt-4.1-mini". */
  id: string;
  /** The vendor API's names for it (and other common spellings). */
  aliases: string[];
  context_window: number;
  /** The most tokens one answer may have, as the vendor documents it (reference: see catalogueInfo). */
  max_output_tokens?: number;
  input_modalities: ("text" | "image" | "audio")[];
  /** USD per million tokens; absent when every host sets its own price. */
  cost?: ModelCost;
  /** The page the figures come from. */
  source: string;
}

/** OpenRouter's routing variants of a model: same model, its own price. */
const VARIANT = /:(free|nitro|floor|online|extended|beta|exacto|thinking)$/i;

let byName: Map<string, CatalogueEntry> | undefined;

function index(): Map<string, CatalogueEntry> {
  if (byName) return byName;
  byName = new Map();
  for (const entry of CATALOGUE) for (const name of [entry.id, ...entry.aliases]) byName.set(name.toLowerCase(), entry);
  return byName;
}

/**
 * The catalogue entry a model key names, found by the key itself, then with its leading
 * segments dropped one by one (a configured provider's name, OpenRouter's vendor prefix):
 * `openrouter/openai/gpt-4.1-mini`, `openai/gpt-4.1-mini` and `gpt-4.1-mini` are one model.
 * Case does not matter. A variant (`:free`, `:nitro`, …) has the model's window but no price.
 * Undefined for a model it does not know (a local `qwen3:8b` is served with whatever window
 * its server was given, so it is not guessed).
 */
export function catalogueEntry(key: string): CatalogueEntry | undefined {
  const names = index();
  const lower = key.trim().toLowerCase();
  const variant = VARIANT.test(lower);
  const base = lower.replace(VARIANT, "");
  const segments = base.split("/");
  for (let i = 0; i < segments.length; i++) {
    const entry = names.get(segments.slice(i).join("/"));
    if (entry) return variant ? { ...entry, cost: undefined } : entry;
  }
  return undefined;
}

/**
 * What the catalogue adds to a model's info: window, modalities, price. Its max output stays
 * reference data: Veil sends max_tokens only when models.json sets max_output_tokens, since
 * OpenAI's reasoning models refuse max_tokens and Anthropic counts it against the window.
 */
export function catalogueInfo(key: string): Partial<ModelInfo> {
  const entry = catalogueEntry(key);
  if (!entry) return {};
  return { context_window: entry.context_window, input_modalities: [...entry.input_modalities], ...(entry.cost ? { cost: { ...entry.cost } } : {}) };
}

export { CATALOGUE };
