import { createRequire } from "node:module";
import type { Ajv as AjvClass, Options } from "ajv";

const require = createRequire(import.meta.url);

/** The JSON Schema drafts AJV validates: draft-07 (with 06 and 04 schemas it reads alike), 2019-09 and 2020-12. */
export type SchemaDialect = "draft-07" | "2019-09" | "2020-12";

/**
 * Creates an AJV instance, loading the library on first need: AJV costs about
 * 100 ms to import, which `veil run` should not pay before its first model request.
 */
export function newAjv(options: Options, dialect: SchemaDialect = "draft-07"): AjvClass {
  if (dialect === "2020-12") return new (require("ajv/dist/2020") as typeof import("ajv/dist/2020.js")).Ajv2020(options);
  if (dialect === "2019-09") return new (require("ajv/dist/2019") as typeof import("ajv/dist/2019.js")).Ajv2019(options);
  const { Ajv } = require("ajv") as typeof import("ajv");
  return new Ajv(options);
}
