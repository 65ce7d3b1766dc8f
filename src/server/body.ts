import type { Context } from "hono";
import { VeilError } from "../errors.js";
import { sharedValidators } from "../base/validation.js";

const validators = new WeakMap<object, (input: unknown) => string | null>();

/** Parses a JSON body (size already capped by the body-limit middleware) and validates it against a schema. */
export async function jsonBody<T>(c: Context, schema: object): Promise<T> {
  let validate = validators.get(schema);
  if (!validate) {
    validate = sharedValidators.compile(schema as Record<string, unknown>);
    validators.set(schema, validate);
  }
  const text = await c.req.text();
  let data: unknown;
  try {
    data = text.trim() === "" ? {} : JSON.parse(text);
  } catch (error) {
    throw new VeilError("VALIDATION_ERROR", `request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) throw new VeilError("VALIDATION_ERROR", "request body must be a JSON object");
  const problem = validate(data);
  if (problem) throw new VeilError("VALIDATION_ERROR", `invalid request body: ${problem.replace(/ Rewrite the input so it satisfies the schema\.$/, "")}`);
  return data as T;
}
