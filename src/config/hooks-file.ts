import { statSync } from "node:fs";
import { join } from "node:path";
import { errorMessage, isVeilError, VeilError } from "../errors.js";
import { configFileSchema, mergeDeep, readJsonFile } from "./load.js";
import { HooksFileSchema } from "./schemas.js";
import type { HooksSettings, VeilPaths } from "./types.js";

/**
 * The hooks now in force: the same object while the settings files are unchanged, the files'
 * current hooks once either changed. Throws CONFIG_ERROR (naming the file and the field) while
 * a settings file's hooks cannot be read: hooks are guardrails, so a bad edit must be seen,
 * never quietly turn them all off.
 */
export type HooksReader = () => HooksSettings | undefined;

/**
 * Hooks re-read from `$VEIL_HOME/settings.json` and `<workspace>/.veil/settings.json` whenever
 * either file changes (a stat of each per call: the cost of two system calls). Until then it
 * answers `initial`, the hooks the configuration was loaded with. Only `hooks` is read again;
 * every other setting keeps its value from the start.
 */
export function settingsHooksReader(paths: VeilPaths, initial: HooksSettings | undefined): HooksReader {
  const files = [join(paths.homeDir, "settings.json"), join(paths.projectDir, "settings.json")];
  let stamp = stampOf(files);
  let current: { hooks: HooksSettings | undefined } | { error: VeilError } = { hooks: initial };
  return () => {
    const now = stampOf(files);
    if (now !== stamp) {
      stamp = now;
      current = readHooks(files);
    }
    if ("error" in current) throw current.error;
    return current.hooks;
  };
}

const hooksFile = configFileSchema(HooksFileSchema);

function readHooks(files: readonly string[]): { hooks: HooksSettings | undefined } | { error: VeilError } {
  let hooks: Record<string, unknown> | undefined;
  try {
    for (const file of files) {
      const own = readJsonFile(file, hooksFile, undefined)?.hooks as Record<string, unknown> | undefined;
      // Project over global, key by key, as the settings merge does.
      if (own) hooks = hooks ? mergeDeep(hooks, own) : own;
    }
  } catch (error) {
    return { error: isVeilError(error) ? error : new VeilError("CONFIG_ERROR", `settings.json cannot be read: ${errorMessage(error)}`, { cause: error }) };
  }
  return { hooks: hooks as HooksSettings | undefined };
}

/** Identity, size and times of each file ("-" when absent): any write or replacement changes it. */
function stampOf(files: readonly string[]): string {
  return files
    .map((file) => {
      try {
        // No exception for a missing file: most runs have no settings file, and this runs per tool call.
        const info = statSync(file, { throwIfNoEntry: false });
        return info ? `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}` : "-";
      } catch {
        return "-";
      }
    })
    .join("|");
}
