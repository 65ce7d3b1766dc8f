import { createRequire } from "node:module";
import type { Ajv, ErrorObject, Options, ValidateFunction } from "ajv";
import { newAjv } from "./ajv.js";

export const VALIDATOR_OPTIONS: Options = { allErrors: true, strict: false, coerceTypes: false, useDefaults: false };

/**
 * One AJV instance for built-in and custom tool schemas; each schema compiled once. A schema
 * compiled at build time (scripts/precompile-validators.mjs) is taken from there, so the first
 * call of a built-in tool loads no AJV.
 */
export function createValidatorFactory() {
  let ajv: Ajv | undefined;
  return {
    compile(schema: Record<string, unknown>): (input: unknown) => string | null {
      const validate: ValidateFunction = precompiledValidators().get(JSON.stringify(schema))?.() ?? (ajv ??= newAjv(VALIDATOR_OPTIONS)).compile(schema);
      return (input) => (validate(input) ? null : describeErrors(validate.errors ?? []));
    },
  };
}

export const sharedValidators = createValidatorFactory();

let precompiled: Map<string, () => ValidateFunction> | undefined;

/**
 * The build's validators by schema text, each loaded on first use; empty where there is no
 * build beside this module (the TypeScript sources under test). The index loads on first
 * need, or ahead by a warm-up.
 */
export function precompiledValidators(): Map<string, () => ValidateFunction> {
  if (precompiled) return precompiled;
  const require = createRequire(import.meta.url);
  let texts: string[];
  try {
    texts = require("./validators/index.cjs") as string[];
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "MODULE_NOT_FOUND") throw error;
    return (precompiled = new Map());
  }
  return (precompiled = new Map(texts.map((text, i) => [text, () => require(`./validators/v${i}.cjs`) as ValidateFunction])));
}

/** Phrases AJV errors so a model can fix its call: names the field and what it must be. */
export function describeErrors(errors: ErrorObject[]): string {
  return `${problemsOf(errors, "the input")}. Rewrite the input so it satisfies the schema.`;
}

/** The first five AJV errors as one phrase ("missing required field "x"; "y" must be number"); `root` names the whole value. */
export function problemsOf(errors: ErrorObject[], root: string): string {
  const lines = errors.slice(0, 5).map((e) => {
    const where = e.instancePath ? `"${e.instancePath.slice(1).replace(/\//g, ".")}"` : root;
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
  return lines.join("; ");
}
