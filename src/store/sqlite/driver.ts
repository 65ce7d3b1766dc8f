import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type BetterSqlite3 from "better-sqlite3";

// Through require, not import: an ESM import of this CommonJS package first scans its source
// for exports, which `veil run` pays at start-up for nothing.
const require = createRequire(import.meta.url);
const Database = require("better-sqlite3") as typeof BetterSqlite3;

/**
 * The native addon's path, handed to the constructor so better-sqlite3 skips `bindings` (a
 * package to load, then a probe of a dozen candidate paths). Undefined when the build is
 * somewhere else (a prebuilt binary in another layout): then the package finds it itself.
 */
const NATIVE_BINDING: string | undefined = (() => {
  const path = join(dirname(require.resolve("better-sqlite3/package.json")), "build", "Release", "better_sqlite3.node");
  return existsSync(path) ? path : undefined;
})();

/** A better-sqlite3 connection to `path` (created when missing). */
export function openDatabase(path: string): BetterSqlite3.Database {
  return new Database(path, NATIVE_BINDING ? { nativeBinding: NATIVE_BINDING } : {});
}

export const SqliteError = Database.SqliteError;
