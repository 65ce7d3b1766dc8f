import type { Hono } from "hono";
import { VeilError } from "../../errors.js";
import { resolveModelKey } from "../../llm/models.js";
import type { AppEnv, ServerState } from "../context.js";

/** One entry of OpenAI's model list. */
export interface ModelEntry {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
}

/** Prefix of the model ids that name an agent. */
export const AGENT_MODEL_PREFIX = "agent/";

/**
 * `GET /v1/models` (and `GET /v1/models/:id`) in OpenAI's shape, so the official clients'
 * `models.list()` works: `defaultModel`, `fallbackModels`, every models.json key, then
 * `agent/<name>` for each visible agent. `owned_by` is the provider a key goes to
 * (`veil` for agents, and for keys no configured provider takes).
 */
export function modelRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const list = () => listModels(state);
  app.get("/v1/models", (c) => c.json({ object: "list", data: list() }));
  app.get("/v1/models/:id{.+}", (c) => {
    const id = c.req.param("id");
    const entry = list().find((model) => model.id === id);
    if (!entry) throw new VeilError("MODEL_NOT_FOUND", `no model "${id}" (GET /v1/models lists them)`);
    return c.json(entry);
  });
}

function listModels(state: ServerState): ModelEntry[] {
  const { config, clock } = state.runtime;
  const { settings } = config;
  const created = Math.floor(clock.now() / 1000);
  const keys = [settings.defaultModel, ...(settings.fallbackModels ?? []), ...Object.keys(config.models)].filter((key): key is string => typeof key === "string" && key.length > 0);
  const entries: ModelEntry[] = [...new Set(keys)].map((id) => ({ id, object: "model", created, owned_by: ownerOf(id, settings) }));
  for (const name of Object.keys(state.runtime.agents())) entries.push({ id: `${AGENT_MODEL_PREFIX}${name}`, object: "model", created, owned_by: "veil" });
  return entries;
}

function ownerOf(key: string, settings: Parameters<typeof resolveModelKey>[1]): string {
  if (key.startsWith("cc/")) return "claude-cli";
  try {
    return resolveModelKey(key, settings).providerName;
  } catch {
    return "veil";
  }
}
