// Bundles the `veil` command (src/main.ts and what it loads) into one CommonJS file,
// dist/src/cli-bundle/veil.cjs, and makes dist/src/main.js (the package's bin) run it through
// V8's code cache (src/cli/boot.ts). Loading ~150 small ESM files cost `veil run` most of its
// start-up; one file whose compiled code comes from the cache costs a fraction of that.
// Packages stay external, resolved from node_modules as before, so optional ones (pg, the
// MCP and Claude SDKs) load only when used; modules the sources import lazily stay lazy
// (esbuild runs a bundled module's top level on its first import). One package is bundled:
// better-sqlite3's JavaScript (13 small CommonJS files every `veil run` loads; its native
// addon stays in node_modules, and package.json pins the version, so the two match).
// Run by `npm run build` after tsc: the rest of dist/src stays tsc's output, for `veilcli`,
// `veilcli/client`, the tool child process and the glob worker thread.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { chmodSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));
const src = join(root, "src");
const distSrc = join(root, "dist", "src");
const out = join(distSrc, "cli-bundle");
const bundleFile = join(out, "veil.cjs");

/**
 * Two things an ES module has that the bundle's loader (src/cli/boot.ts) hands in instead:
 * - `import.meta.url`: a module that finds files beside itself (the glob worker, the tool
 *   child entry, package.json, the dashboard) keeps finding them from tsc's copy of itself,
 *   so it becomes that copy's URL, resolved against the bundle's (`__veilBundleUrl`);
 * - `import()` of a package (the Claude SDK is ESM only): `__veilImport`, the bin's own
 *   import(). Relative imports stay import() for esbuild to bundle.
 * And the entry's `#!` line goes: the bundle is a function body.
 */
const asCommonJsBody = {
  name: "as-commonjs-body",
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      let text = readFileSync(args.path, "utf8");
      if (args.path === join(src, "store", "sqlite", "driver.ts")) text = bundleSqliteDriver(text);
      if (args.path === join(src, "main.ts")) text = text.replace(/^#!.*\n/, "\n");
      const compiled = join(distSrc, relative(src, args.path)).replace(/\.ts$/, ".js");
      const fromBundle = relative(out, compiled).split(sep).join("/");
      text = text.replaceAll("import.meta.url", `new URL(${JSON.stringify(fromBundle)}, __veilBundleUrl).href`);
      text = text.replace(/(?<![\w$.]|typeof\s+)import\((?!\s*["']\.)/g, "__veilImport(");
      return { contents: text, loader: "ts" };
    });
  },
};

/** driver.ts loads better-sqlite3 through createRequire; the bundle's own require lets esbuild take it in. */
function bundleSqliteDriver(text) {
  const ownRequire = "const require = createRequire(import.meta.url);";
  if (!text.includes(ownRequire)) throw new Error(`bundle-cli: src/store/sqlite/driver.ts no longer has "${ownRequire}"; update bundleSqliteDriver`);
  return text.replace(ownRequire, "");
}

/** Every package external but the ones named. */
const externalPackagesBut = (bundled) => ({
  name: "external-packages",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => (bundled.includes(args.path) ? undefined : { path: args.path, external: true }));
  },
});

rmSync(out, { recursive: true, force: true });
const result = await build({
  entryPoints: [join(src, "main.ts")],
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  outfile: bundleFile,
  // Less to scan and to cache; names are kept so stack traces stay readable.
  minifyWhitespace: true,
  minifySyntax: true,
  plugins: [asCommonJsBody, externalPackagesBut(["better-sqlite3"])],
  legalComments: "none",
  logLevel: "warning",
});
if (result.warnings.length > 0) throw new Error("bundle-cli: esbuild warned (see above); the CommonJS bundle would be wrong");
// Pure ASCII, so the bin reads it as latin1 into a one-byte string: no UTF-8 decoding, half
// the memory. esbuild escapes non-ASCII text except inside regular expressions; \uXXXX is the
// same character there (a surrogate pair is one code point under the u flag).
const bundle = readFileSync(bundleFile, "utf8").replace(/[^\x00-\x7f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
writeFileSync(bundleFile, bundle);
// A vm script has no module loader: an import() left in it would throw when reached.
if (/(?<![\w$.])import\(|import\.meta/.test(bundle)) throw new Error("bundle-cli: the bundle still contains import() or import.meta");
// The cache is keyed by the bundle's content, so a cache from another build is never read.
const bundleId = createHash("sha256").update(bundle).digest("hex").slice(0, 16);
const bin = join(distSrc, "main.js");
writeFileSync(
  bin,
  `#!/usr/bin/env node
// The \`veil\` command: src/main.ts, bundled by scripts/bundle-cli.mjs, run by src/cli/boot.ts.
import { runBundle } from "./cli/boot.js";
runBundle(new URL("./cli-bundle/veil.cjs", import.meta.url), ${JSON.stringify(bundleId)}, (specifier) => import(specifier));
`,
);
chmodSync(bin, 0o755);
// tsc's map described the unbundled main.js.
rmSync(`${bin}.map`, { force: true });
