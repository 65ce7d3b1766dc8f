import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { locateRunner } from "../../../src/tools/custom/source.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));

/**
 * Custom tools run in a compiled child entry (dist/). `npm test` builds first; when a
 * test file runs alone on a tree without dist/, build it the same way.
 */
export async function ensureBuiltRunner(): Promise<string> {
  const runner = locateRunner(new URL("../../../src/tools/custom/source.ts", import.meta.url).href);
  if (existsSync(runner)) return runner;
  // tsc exits non-zero on type errors elsewhere in the tree but still emits; check the file instead.
  await promisify(execFile)(process.execPath, [fileURLToPath(new URL("node_modules/typescript/bin/tsc", `file://${REPO}`)), "-p", "tsconfig.json"], { cwd: REPO }).catch(() => undefined);
  if (!existsSync(runner)) throw new Error(`could not build ${runner}; run npm run build`);
  return runner;
}
