import type { Settings } from "../../config/types.js";
import type { ToolContext } from "../types.js";
import type { CallContext } from "./protocol.js";

const PROTOTYPE_KEYS = new Set(["__proto__", "constructor", "prototype"]);
/** Key names whose values are secrets: apiKey, api_key, secret, clientSecret, token, authToken, password… (not apiKeyEnv, not max_tokens). */
const SECRET_KEY = /(api[-_]?key|secret|token|password|passwd|credentials?)$/i;
const SECRET_HEADER = /^(authorization|proxy-authorization|cookie|x-api-key|api-key)$/i;

/**
 * The model's input without `_`-prefixed keys (those are the runtime's injected
 * fields) and without prototype keys.
 */
export function modelInput(input: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (key.startsWith("_") || PROTOTYPE_KEYS.has(key)) continue;
    out[key] = value;
  }
  return out;
}

/**
 * Settings as a custom tool sees them (`_settings`): every value stored under a
 * secret-looking key is removed (providers' apiKey, tokens, passwords, auth
 * headers); `apiKeyEnv` names stay so a tool can tell which variable is used.
 */
export function sanitizeSettings(settings: Settings): Record<string, unknown> {
  return strip(settings, 0) as Record<string, unknown>;
}

function strip(value: unknown, depth: number): unknown {
  if (depth > 20) return undefined;
  if (Array.isArray(value)) return value.map((item) => strip(item, depth + 1));
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    if (PROTOTYPE_KEYS.has(key)) continue;
    if (SECRET_KEY.test(key) || SECRET_HEADER.test(key)) continue;
    out[key] = strip(item, depth + 1);
  }
  return out;
}

/** The plain data behind the injected `_` fields; functions are built in the child. */
export function callContext(ctx: ToolContext): CallContext {
  return {
    cwd: ctx.workspace,
    agent: JSON.parse(JSON.stringify(ctx.agent)) as unknown,
    sessionId: ctx.sessionId,
    settings: sanitizeSettings(ctx.settings),
    modelKey: ctx.modelKey,
  };
}

/** Environment for tool processes: the server's, minus the variables that hold provider keys. */
export function childEnv(env: NodeJS.ProcessEnv, settings: Settings): NodeJS.ProcessEnv {
  const drop = new Set(["VEIL_API_KEY", "VEIL_SECRET"]);
  for (const provider of Object.values(settings.providers ?? {})) if (provider.apiKeyEnv) drop.add(provider.apiKeyEnv);
  const out: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(env)) if (!drop.has(key)) out[key] = value;
  return out;
}
