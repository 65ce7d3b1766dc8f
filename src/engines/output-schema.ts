import { createRequire } from "node:module";
import type { ValidateFunction } from "ajv";
import { newAjv, type SchemaDialect } from "../base/ajv.js";
import { VALIDATOR_OPTIONS, problemsOf } from "../base/validation.js";
import { VeilError } from "../errors.js";

/** A schema's JSON text may be this long: it goes into the system prompt and every model request of the turn. */
export const MAX_OUTPUT_SCHEMA_BYTES = 64 * 1024;

/** Repair requests a turn may send before it fails with OUTPUT_SCHEMA_MISMATCH. */
export const MAX_OUTPUT_REPAIRS = 2;

/** The name a provider's response_format is given when the caller named none. */
export const DEFAULT_OUTPUT_NAME = "output";

/** OpenAI's rule for `json_schema.name`, which other providers share. */
const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** How one answer measured up: its parsed value, or what is wrong with it (phrased for the model). */
export type OutputCheck = { ok: true; value: unknown } | { ok: false; problem: string };

/** A turn's output schema, compiled once when the request arrives. */
export interface OutputSchema {
  readonly name: string;
  readonly schema: Record<string, unknown>;
  check(answer: string | null): OutputCheck;
}

/** What the raw schema travels as where a compiled one cannot (an inbox row another node runs). */
export interface OutputSchemaSpec {
  name: string;
  schema: Record<string, unknown>;
}

/**
 * Compiles a caller's JSON Schema, or throws VALIDATION_ERROR naming what is wrong (not an
 * object, too large, an unknown draft, a schema AJV refuses, a bad name). `where` names the
 * field in the message ("output_schema", "response_format.json_schema.schema").
 */
export function compileOutputSchema(schema: unknown, where: string, name: string = DEFAULT_OUTPUT_NAME): OutputSchema {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) throw invalid(`${where} must be a JSON Schema object`);
  if (!NAME_PATTERN.test(name)) throw invalid(`the schema's name ${JSON.stringify(name)} must be 1 to 64 letters, digits, "_" or "-"`);
  const text = JSON.stringify(schema);
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_OUTPUT_SCHEMA_BYTES) throw invalid(`${where} is ${bytes} bytes of JSON; at most ${MAX_OUTPUT_SCHEMA_BYTES} are accepted`);
  const object = schema as Record<string, unknown>;
  let validate: ValidateFunction;
  try {
    const ajv = newAjv({ ...VALIDATOR_OPTIONS, logger: false }, dialectOf(object.$schema, where));
    // "format": "email", "date-time", "uri"… are checked, not ignored.
    (createRequire(import.meta.url)("ajv-formats") as typeof import("ajv-formats")).default(ajv);
    validate = ajv.compile(object);
  } catch (error) {
    if (error instanceof VeilError) throw error;
    throw invalid(`${where} is not a valid JSON Schema: ${(error as Error).message}`);
  }
  return {
    name,
    schema: object,
    check(answer) {
      const text = (answer ?? "").trim();
      if (text === "") return { ok: false, problem: "the answer was empty" };
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (error) {
        const fenced = text.startsWith("```") ? " (it is wrapped in a code fence: send the JSON text alone)" : "";
        return { ok: false, problem: `the answer is not valid JSON${fenced}: ${(error as Error).message}` };
      }
      if (validate(value)) return { ok: true, value };
      return { ok: false, problem: `the JSON does not match the schema: ${problemsOf(validate.errors ?? [], "the value")}` };
    },
  };
}

/** The spec again compiled (it was checked when it arrived; a change of AJV could still refuse it). */
export function compileSpec(spec: OutputSchemaSpec): OutputSchema {
  return compileOutputSchema(spec.schema, "output_schema", spec.name);
}

/** The words that tell the model, in the system prompt of each model call of the turn. */
export function outputInstructions(output: OutputSchema): string {
  return [
    "# Final answer format",
    "Work with your tools as usual. When you are done, your final answer must be a single JSON value valid against the JSON Schema below: the JSON text alone, with no words around it and no code fence.",
    "",
    JSON.stringify(output.schema),
  ].join("\n");
}

/** The repair request: what is wrong with the last answer, and what to send instead. */
export function repairRequest(problem: string, output: OutputSchema): string {
  return `Your final answer cannot be used: ${problem}. Answer again with only a JSON value valid against this JSON Schema (no other text, no code fence):\n${JSON.stringify(output.schema)}`;
}

/** What the turn does with a final answer: take it, ask for a repair, or fail. */
export type OutputVerdict =
  | { kind: "accept"; value: unknown }
  | { kind: "repair"; request: string }
  | { kind: "mismatch"; error: { code: "OUTPUT_SCHEMA_MISMATCH"; message: string } };

/** Judges one final answer of a turn that has already sent `repairsSent` repair requests. */
export function judgeAnswer(output: OutputSchema, answer: string | null, repairsSent: number): OutputVerdict {
  const checked = output.check(answer);
  if (checked.ok) return { kind: "accept", value: checked.value };
  if (repairsSent < MAX_OUTPUT_REPAIRS) return { kind: "repair", request: repairRequest(checked.problem, output) };
  return { kind: "mismatch", error: mismatch(`${checked.problem} (after ${repairsSent} repair request${repairsSent === 1 ? "" : "s"})`) };
}

export function mismatch(message: string): { code: "OUTPUT_SCHEMA_MISMATCH"; message: string } {
  return { code: "OUTPUT_SCHEMA_MISMATCH", message: `the final answer does not match the output schema: ${message}` };
}

function dialectOf(declared: unknown, where: string): SchemaDialect {
  if (declared === undefined) return "draft-07";
  const text = typeof declared === "string" ? declared : "";
  if (text.includes("2020-12")) return "2020-12";
  if (text.includes("2019-09")) return "2019-09";
  if (text.includes("draft-07")) return "draft-07";
  throw invalid(`${where}.$schema ${JSON.stringify(declared)} is not a draft Veil validates: use draft-07, 2019-09 or 2020-12 (or leave $schema out)`);
}

function invalid(message: string): VeilError {
  return new VeilError("VALIDATION_ERROR", message);
}
