import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import { newAjv } from "./ajv.js";

/** One AJV instance for built-in and custom tool schemas; each schema compiled once. */
export function createValidatorFactory() {
  let ajv: Ajv | undefined;
  return {
    compile(schema: Record<string, unknown>): (input: unknown) => string | null {
      ajv ??= newAjv({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false });
      const validate: ValidateFunction = ajv.compile(schema);
      return (input) => (validate(input) ? null : describeErrors(validate.errors ?? []));
    },
  };
}

export const sharedValidators = createValidatorFactory();

/** Phrases AJV errors so a model can fix its call: names the field and what it must be. */
export function describeErrors(errors: ErrorObject[]): string {
  const lines = errors.slice(0, 5).map((e) => {
    const where = e.instancePath ? `"${e.instancePath.slice(1).replace(/\//g, ".")}"` : "the input";
    switch (e.keyword) {
      case "required":
        return `missing required field "${(e.params as { missingProperty: string }).missingProperty}"`;
      case "additionalProperties":
        return `unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"`;
      case "type":
        return `${where} must be ${(e.params as { type: string }).type}`;
      case "enum":
        return `${where} must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`;
      default:
        return `${where} ${e.message ?? "is invalid"}`;
    }
  });
  return `${lines.join("; ")}. Rewrite the input so it satisfies the schema.`;
}
