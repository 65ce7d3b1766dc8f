import { createRequire } from "node:module";
import type { Ajv as AjvClass, Options } from "ajv";

const require = createRequire(import.meta.url);

/**
 * Creates an AJV instance, loading the library on first need: AJV costs about
 * 100 ms to import, which `veil run` should not pay before its first model request.
 */
export function newAjv(options: Options): AjvClass {
  const { Ajv } = require("ajv") as typeof import("ajv");
  return new Ajv(options);
}
