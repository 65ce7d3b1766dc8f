import { existsSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The compiled `.js` of an entry module that runs in its own process or thread
 * (`file` beside the module at `from`, an import.meta.url). Compiled code finds it next
 * to itself; code run from the TypeScript sources (tests) finds the same path under
 * `dist/`, since a worker or child process cannot load `.ts`.
 */
export function compiledEntry(from: string, file: string): string {
  const here = fileURLToPath(from);
  const sibling = join(dirname(here), file);
  if (here.endsWith(".js") && existsSync(sibling)) return sibling;
  const marker = `${sep}src${sep}`;
  const at = here.lastIndexOf(marker);
  if (at < 0) return sibling;
  return join(here.slice(0, at), "dist", "src", dirname(here.slice(at + marker.length)), file);
}
