/**
 * The JSON Schema a model is shown for a built-in tool: the validating schema without the
 * keywords only the validator needs, written the short way. Every call is still checked
 * against the full schema, so nothing is given up: an unknown field or an empty string
 * gets the same clear error; the model just reads (and pays context for) less.
 *
 * - `additionalProperties`, `minimum`, and the length and item caps are dropped (the
 *   validator keeps them; a limit the model must know, `maximum`, stays);
 * - `anyOf` of string constants becomes `{ type: "string", enum: [...] }`;
 * - `anyOf: [X, { type: "null" }]` becomes X with `type: [X.type, "null"]`;
 * - `anyOf` of bare types (`{ type: "string" }`, `{ type: "number" }`) becomes `type: [...]`.
 */
export function modelSchema(schema: Record<string, unknown>): Record<string, unknown> {
  return shorten(schema) as Record<string, unknown>;
}

const VALIDATOR_ONLY = new Set(["additionalProperties", "minLength", "maxLength", "minimum", "maxItems"]);

function shorten(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(shorten);
  if (node === null || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) if (!VALIDATOR_ONLY.has(key)) out[key] = shorten(value);
  const variants = out.anyOf;
  if (!Array.isArray(variants)) return out;
  const { anyOf: _anyOf, ...rest } = out;
  const constants = stringConstants(variants as Record<string, unknown>[]);
  if (constants) return { ...rest, type: "string", enum: constants };
  const nullable = nullableOf(variants as Record<string, unknown>[]);
  if (nullable) return { ...rest, ...nullable, type: [nullable.type, "null"] };
  const types = bareTypes(variants as Record<string, unknown>[]);
  if (types) return { ...rest, type: types };
  return out;
}

function stringConstants(variants: Record<string, unknown>[]): string[] | null {
  const plain = variants.every((v) => typeof v.const === "string" && Object.keys(v).every((k) => k === "const" || k === "type"));
  return plain ? variants.map((v) => v.const as string) : null;
}

function bareTypes(variants: Record<string, unknown>[]): string[] | null {
  const bare = variants.every((v) => typeof v.type === "string" && Object.keys(v).length === 1);
  return bare ? variants.map((v) => v.type as string) : null;
}

function nullableOf(variants: Record<string, unknown>[]): Record<string, unknown> | null {
  if (variants.length !== 2) return null;
  const [value, nothing] = variants as [Record<string, unknown>, Record<string, unknown>];
  const isNull = Object.keys(nothing).length === 1 && nothing.type === "null";
  return isNull && typeof value.type === "string" && value.anyOf === undefined && value.description === undefined ? value : null;
}
