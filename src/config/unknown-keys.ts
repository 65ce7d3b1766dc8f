import { createRequire } from "node:module";

// Loaded when a file has a key to suggest a fix for, not by every start-up.
const require = createRequire(import.meta.url);
let levenshtein: typeof import("fastest-levenshtein") | undefined;
import type { Logger } from "../base/log.js";

/** A key of a config file that its schema does not name. */
export interface UnknownKey {
  /** Where it is, e.g. `budgett`, `retry.maxRetrys`, `modes.chat.tool`, `["local/qwen3"].context_windw`. */
  path: string;
  /** The known key at the same place that is closest to it, written as `path` is. */
  suggestion?: string;
  /** The schema refuses extra keys there, so validating the file fails on this one. */
  refused: boolean;
}

/** One unknown key of one file, as the loader reports it. */
export interface UnknownKeyNotice extends UnknownKey {
  file: string;
}

export type UnknownKeyListener = (notice: UnknownKeyNotice) => void;

interface ObjectSchema {
  type?: unknown;
  properties?: Record<string, ObjectSchema>;
  additionalProperties?: boolean | ObjectSchema;
  items?: ObjectSchema;
}

/**
 * Every key of `data` that `schema` does not name, found by walking both together: the
 * properties of each object schema, the values of records (`additionalProperties` holding a
 * schema) and the items of arrays. Objects with no named properties are free-form and not
 * looked into.
 */
export function findUnknownKeys(data: unknown, schema: object): UnknownKey[] {
  const found: UnknownKey[] = [];
  walk(data, schema as ObjectSchema, [], found);
  return found;
}

function walk(data: unknown, schema: ObjectSchema, at: string[], found: UnknownKey[]): void {
  if (Array.isArray(data)) {
    if (schema.items) data.forEach((item, index) => walk(item, schema.items!, [...at, `[${index}]`], found));
    return;
  }
  if (typeof data !== "object" || data === null) return;
  const properties = schema.properties ?? {};
  const known = Object.keys(properties);
  const extra = schema.additionalProperties;
  for (const [key, value] of Object.entries(data)) {
    if (Object.hasOwn(properties, key)) walk(value, properties[key]!, [...at, key], found);
    else if (typeof extra === "object") walk(value, extra, [...at, key], found);
    else if (known.length > 0) {
      const closest = closestKey(key, known);
      found.push({ path: dotted([...at, key]), ...(closest ? { suggestion: dotted([...at, closest]) } : {}), refused: extra === false });
    }
  }
}

/** The known key a typo most likely meant: case aside, at most a third of its letters off (and at least one). */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  const wanted = key.toLowerCase();
  const limit = Math.max(1, Math.floor(key.length / 3));
  let best: { key: string; cost: number } | undefined;
  for (const candidate of known) {
    const cost = (levenshtein ??= require("fastest-levenshtein") as typeof import("fastest-levenshtein")).distance(wanted, candidate.toLowerCase());
    if (cost <= limit && (!best || cost < best.cost)) best = { key: candidate, cost };
  }
  return best?.key;
}

function dotted(parts: readonly string[]): string {
  return parts.reduce((path, part) => {
    if (part.startsWith("[")) return path + part;
    const segment = /^[A-Za-z_$][\w$-]*$/.test(part) ? part : `[${JSON.stringify(part)}]`;
    return path === "" || segment.startsWith("[") ? path + segment : `${path}.${segment}`;
  }, "");
}

/** `did you mean "defaultModel"?`, or nothing when no known key is close. */
export function didYouMean(notice: UnknownKey): string {
  return notice.suggestion ? ` (did you mean "${notice.suggestion}"?)` : "";
}

/**
 * Logs each unknown key once per (file, key) for as long as the returned listener lives (a
 * process's runtime keeps one), however often the file is read again.
 */
export function warnUnknownKeysOnce(log: Logger): UnknownKeyListener {
  const seen = new Set<string>();
  return (notice) => {
    const id = `${notice.file}\0${notice.path}`;
    if (seen.has(id)) return;
    seen.add(id);
    log.warn(`unknown key "${notice.path}" in ${notice.file}${didYouMean(notice)}; Veil does not use it`, { file: notice.file, key: notice.path, ...(notice.suggestion ? { suggestion: notice.suggestion } : {}) });
  };
}
