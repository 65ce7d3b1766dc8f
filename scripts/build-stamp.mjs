// The build's stamp: a SHA-256 of every input of `npm run build` (sources, scripts, the
// dashboard, the TypeScript and npm manifests), written to dist/.build-stamp as the build's
// last step. scripts/prepare.mjs compares it with the sources to skip a build that would
// produce the dist/ already there. Run as a script, it writes the stamp; imported, it
// computes and reads stamps.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../", import.meta.url));
export const STAMP_FILE = join(ROOT, "dist", ".build-stamp");

/** What the build reads: these folders (every file in them) and files. */
const INPUT_DIRS = ["src", "dashboard", "scripts", "bench", "test/helpers"];
const INPUT_FILES = ["package.json", "package-lock.json", "tsconfig.json"];

/** Files the build writes that must all be there for a dist/ to count as built. */
export const BUILD_OUTPUTS = ["dist/src/main.js", "dist/src/cli-bundle/veil.cjs", "dist/src/index.js", "dist/src/base/validators/index.cjs", "dist/dashboard/app.js", "dist/dashboard/index.html"];

function filesUnder(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** The stamp of the sources as they are now: paths and contents, in a fixed order. */
export function sourceStamp(root = ROOT) {
  const files = [];
  for (const dir of INPUT_DIRS) if (existsSync(join(root, dir))) files.push(...filesUnder(join(root, dir)));
  for (const file of INPUT_FILES) if (existsSync(join(root, file))) files.push(join(root, file));
  const hash = createHash("sha256");
  for (const file of files.map((f) => relative(root, f).split(sep).join("/")).sort()) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(join(root, file)));
    hash.update("\0");
  }
  return hash.digest("hex");
}

/** The stamp the last build wrote, or null when there is none or an output is missing. */
export function builtStamp(root = ROOT) {
  if (BUILD_OUTPUTS.some((file) => !existsSync(join(root, file)))) return null;
  const file = join(root, "dist", ".build-stamp");
  return existsSync(file) && statSync(file).isFile() ? readFileSync(file, "utf8").trim() : null;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) writeFileSync(STAMP_FILE, `${sourceStamp()}\n`);
