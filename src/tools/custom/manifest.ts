import type { Ajv } from "ajv";
import { newAjv } from "../../base/ajv.js";
import { touchesProblem } from "../declared-touches.js";

/** What a valid tool.json declares. */
export interface ToolManifest {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** Watchdog in seconds (tool.json `timeout`, default 30). */
  timeoutSeconds: number;
  /** Input fields holding the paths a call writes (tool.json `touches`): calls on one path run one after another. */
  touches?: string[];
}

export type ManifestResult = { ok: true; manifest: ToolManifest } | { ok: false; reason: string };

export const DEFAULT_TIMEOUT_SECONDS = 30;
/** OpenAI-compatible function names; snake_case is the convention. */
const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const RESERVED_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/** Checks schemas against the JSON Schema meta-schema: cheap, unlike compiling them. */
export function createSchemaChecker() {
  let ajv: Ajv | undefined;
  return (schema: Record<string, unknown>): string | null => {
    ajv ??= newAjv({ strict: false, validateSchema: true });
    if (ajv.validateSchema(schema)) return null;
    return ajv.errorsText(ajv.errors, { dataVar: "input_schema" });
  };
}

/** Parses and checks one tool.json text. Never throws. */
export function parseManifest(text: string, checkSchema: (schema: Record<string, unknown>) => string | null): ManifestResult {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `tool.json is not valid JSON (${(error as Error).message})` };
  }
  if (!isObject(raw)) return { ok: false, reason: "tool.json must hold a JSON object" };
  const { name, description, input_schema: schema, timeout, touches } = raw;
  if (typeof name !== "string" || !NAME.test(name)) {
    return { ok: false, reason: `"name" must be a snake_case tool name (letters, digits, "_" or "-", starting with a letter, at most 64), got ${JSON.stringify(name)}` };
  }
  if (typeof description !== "string" || description.trim() === "") return { ok: false, reason: `"description" must be a non-empty string` };
  if (!isObject(schema)) return { ok: false, reason: `"input_schema" must be a JSON Schema object` };
  if (schema.type !== undefined && schema.type !== "object") return { ok: false, reason: `"input_schema.type" must be "object", got ${JSON.stringify(schema.type)}` };
  const properties = schema.properties;
  if (properties !== undefined && !isObject(properties)) return { ok: false, reason: `"input_schema.properties" must be an object` };
  for (const key of Object.keys(properties ?? {})) {
    if (key.startsWith("_")) {
      return { ok: false, reason: `input_schema property "${key}" starts with "_"; underscore names are reserved for injected fields (_cwd, _agent, …)` };
    }
    if (RESERVED_KEYS.has(key)) return { ok: false, reason: `input_schema property "${key}" is a reserved name` };
  }
  if (timeout !== undefined && (typeof timeout !== "number" || !Number.isFinite(timeout) || timeout <= 0)) {
    return { ok: false, reason: `"timeout" must be a positive number of seconds, got ${JSON.stringify(timeout)}` };
  }
  const touchesWrong = touches === undefined ? null : touchesProblem(touches, properties as Record<string, unknown> | undefined);
  if (touchesWrong) return { ok: false, reason: touchesWrong };
  const inputSchema = { ...schema, type: "object" };
  const problem = checkSchema(inputSchema);
  if (problem) return { ok: false, reason: `input_schema is not a valid JSON Schema: ${problem}` };
  const manifest: ToolManifest = { name, description, inputSchema, timeoutSeconds: (timeout as number | undefined) ?? DEFAULT_TIMEOUT_SECONDS };
  if (Array.isArray(touches) && touches.length > 0) manifest.touches = touches as string[];
  return { ok: true, manifest };
}

/**
 * The rule of thumb: a tool using `_remoteMethodExecution` (default 120 s)
 * needs `timeout` ≥ timeoutMs / 1000 + 5. Returns a warning, or null.
 */
export function remoteTimeoutWarning(source: string, timeoutSeconds: number): string | null {
  if (!source.includes("_remoteMethodExecution")) return null;
  if (/timeoutMs\s*:/.test(source)) return null;
  if (timeoutSeconds >= 125) return null;
  return (
    `uses _remoteMethodExecution (default timeoutMs 120000) but "timeout" is ${timeoutSeconds} s: ` +
    `the watchdog will stop the tool before the UI can answer. Rule of thumb: tool.json timeout >= _remoteMethodExecution timeoutMs / 1000 + 5 ` +
    `(set "timeout": 125, or pass a shorter timeoutMs)`
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
