import { errorMessage } from "../errors.js";

/**
 * A tool call's arguments: JSON text that must hold an object (empty text counts as `{}`).
 * `problem` completes "arguments are …": "not valid JSON (…)" or "not a JSON object (…)".
 */
export type ParsedToolArguments = { ok: true; value: Record<string, unknown> } | { ok: false; problem: string };

export function parseToolArguments(text: string): ParsedToolArguments {
  const trimmed = text.trim();
  if (trimmed === "") return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch (error) {
    return { ok: false, problem: `not valid JSON (${errorMessage(error)})` };
  }
  if (Array.isArray(value)) return { ok: false, problem: "not a JSON object (an array)" };
  if (typeof value !== "object" || value === null) return { ok: false, problem: `not a JSON object (${value === null ? "null" : `a ${typeof value}`})` };
  return { ok: true, value: value as Record<string, unknown> };
}

/** What a request carries for arguments the model wrote. */
export const STAND_IN_ARGUMENTS = "{}";

/**
 * The arguments of an earlier call as a request carries them: the text itself when it holds
 * a JSON object, else `{}`. A call cut off by max_tokens or written malformed is never run,
 * but its text would go back with every later request, and a strict provider answers 400 to
 * each of them; the store keeps the raw text and the call's result says what was wrong.
 */
export function wireToolArguments(text: string): string {
  if (text.trim() === "") return STAND_IN_ARGUMENTS;
  return parseToolArguments(text).ok ? text : STAND_IN_ARGUMENTS;
}
