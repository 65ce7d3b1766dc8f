import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** This package's package.json, found once (two levels up from src/ or dist/src/). */
const found = ((): { root: string; version: string } | null => {
  for (const rel of ["../package.json", "../../package.json"]) {
    const url = new URL(rel, import.meta.url);
    try {
      const pkg = JSON.parse(readFileSync(url, "utf8")) as { name?: string; version?: string };
      if (pkg.name === "veilcli" && pkg.version) return { root: fileURLToPath(new URL(".", url)).replace(/\/$/, ""), version: pkg.version };
    } catch {
      // try the next candidate
    }
  }
  return null;
})();

/** The package version. */
export const VERSION: string = found?.version ?? "0.0.0";

/** The package's folder (its package.json, dist/ and node_modules/); null when it cannot be found. */
export const PACKAGE_ROOT: string | null = found?.root ?? null;
