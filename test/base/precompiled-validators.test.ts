import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { allBuiltinTools } from "../../src/core/builtins.js";
import { AgentFileSchema, ModelsFileSchema, SettingsFileSchema } from "../../src/config/schemas.js";
import { createValidatorFactory } from "../../src/base/validation.js";
import { CompletionBody } from "../../src/server/routes/completions.js";
import { MintBody, ResultBody } from "../../src/server/routes/remote-methods.js";
import { ChatBody, CreateBody } from "../../src/server/routes/sessions.js";
import { ArmBody } from "../../src/server/routes/wakeups.js";
import { present } from "../helpers/requirements.js";

const BUILT = fileURLToPath(new URL("../../dist/src/base/validation.js", import.meta.url));

/** Inputs that pass and fail in different ways: missing fields, unknown fields, wrong types. */
function samples(schema: Record<string, unknown>): unknown[] {
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  const wrongTypes = Object.fromEntries(Object.keys(properties).map((key) => [key, { not: "this" }]));
  const strings = Object.fromEntries(Object.keys(properties).map((key) => [key, ""]));
  return [{}, null, "text", [], { unknown_field: 1 }, wrongTypes, strings, { ...strings, extra: true }];
}

/**
 * The build compiles the built-in tools', config files' and request bodies' schemas ahead (scripts/
 * precompile-validators.mjs); base/validation.ts takes them from there by schema text.
 * The built validation module must find every one, and answer exactly as AJV does.
 */
describe.skipIf(!present(`the build (${BUILT})`, existsSync(BUILT)))("validators compiled at build time", () => {
  const schemas: [string, Record<string, unknown>][] = [
    ...allBuiltinTools().map((tool): [string, Record<string, unknown>] => [tool.name, tool.inputSchema]),
    ["settings.json", JSON.parse(JSON.stringify(SettingsFileSchema)) as Record<string, unknown>],
    ["models.json", JSON.parse(JSON.stringify(ModelsFileSchema)) as Record<string, unknown>],
    ["agent file", JSON.parse(JSON.stringify(AgentFileSchema)) as Record<string, unknown>],
    ...Object.entries({ ChatBody, CreateBody, CompletionBody, ArmBody, MintBody, ResultBody }).map(([name, schema]): [string, Record<string, unknown>] => [`request body ${name}`, JSON.parse(JSON.stringify(schema)) as Record<string, unknown>]),
  ];

  it("cover every built-in tool, config file and request-body schema of this source", async () => {
    const built = (await import(BUILT)) as typeof import("../../src/base/validation.js");
    const table = built.precompiledValidators();
    const missing = schemas.filter(([, schema]) => !table.has(JSON.stringify(schema))).map(([name]) => name);
    expect(missing, "rebuild (npm run build): these schemas changed since").toEqual([]);
  });

  it("answer every sample input as AJV compiled at run time does", async () => {
    const built = (await import(BUILT)) as typeof import("../../src/base/validation.js");
    const ahead = built.createValidatorFactory();
    // The source's factory finds no build beside src/base, so it compiles with AJV.
    const atRunTime = createValidatorFactory();
    for (const [name, schema] of schemas) {
      const a = ahead.compile(schema);
      const b = atRunTime.compile(schema);
      for (const input of samples(schema)) expect(a(input), `${name} ${JSON.stringify(input)}`).toBe(b(input));
    }
  });
});
